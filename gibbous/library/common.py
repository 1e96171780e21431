"""What every primitive rule needs: patterns, cotangents, broadcasting, rdata of scalars.

Conventions of the rules in this package (docs/rules.md, "Primitive rules"):

* A result that is a new float/complex array gets a new zero fdata (``new_fdata``); the pullback
  reads that fdata as the cotangent.  A scalar result has no fdata; its cotangent is the rdata
  the pullback receives (``cotangent`` hides the difference).
* A result that shares memory with an argument (a view) gets the same view of the argument's
  fdata (``view_fdata``) and its pullback adds nothing: the cotangent is already in the
  argument's memory.
* ``send(x, g)`` delivers a gradient ``g`` (shaped like the call's output) to an operand: summed
  back to the operand's shape (``unbroadcast``), added into an array's fdata, returned as the
  rdata of a float or complex scalar.  Real operands take the real part of a complex gradient
  (the gradient of a real ``L`` along a real direction, docs/tangents.md).
* A pullback may receive ``NoTangent()`` for a float result (no cotangent reached it); that
  counts as zero.  Pullbacks return ``NoTangent()`` for operands without rdata and a zero of the
  operand's own class for float operands that get nothing.
"""

from __future__ import annotations

import math
import numbers
import typing as t

import attrs
import numpy as np

from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.infer.implementations import twin_helper
from gibbous.ir import types as T
from gibbous.tangents import pool
from gibbous.rules.registry import Pullback, no_derivative
from gibbous.tangents.model import (
    NO_TANGENT,
    CoDual,
    refuse_object_array,
    zero_fdata,
    zero_rdata,
)

Array = np.ndarray[t.Any, t.Any]
CD = CoDual[t.Any, t.Any]
RuleResult = tuple[CD, Pullback]

NT = NO_TANGENT

# Patterns.  ``NUMBER`` is every scalar number: Python and NumPy bools, ints, floats, complex
# numbers and constants of those (and other ``numbers.Number`` classes, such as Fraction, which
# are not floats: they get no gradient).
NUMBER: T.Type = T.Object(numbers.Number)
ARRAY: T.Type = T.Array(None, None)
ANY: T.Type = T.ANY
STR: T.Type = T.STR
TUPLE: T.Type = T.Object(tuple)
LIST: T.Type = T.Object(list)
DICT: T.Type = T.Object(dict)
NUMERIC = (ARRAY, NUMBER)  # an operand of an elementwise operation

_INEXACT_SCALARS = (float, complex, np.floating, np.complexfloating)
_COMPLEX_SCALARS = (complex, np.complexfloating)
_PLAIN_NUMBERS = (bool, int, float, complex, np.number, np.bool_)


def nothing(n: int) -> tuple[t.Any, ...]:
    """The rdata of ``n`` operands without any."""
    return (NT,) * n


def no_pullback(n: int) -> Pullback:
    """The pullback of a call of ``n`` operands (the callee included) that sends nothing back."""
    result = nothing(n)
    return lambda dy: result


def is_float_array(x: object) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def is_inexact_scalar(x: object) -> bool:
    """A float or complex scalar: a value whose tangent is rdata."""
    return isinstance(x, _INEXACT_SCALARS)


_FLOAT64 = np.dtype(np.float64)


def new_fdata(y: object) -> t.Any:
    """The fdata of a new result: zeros for a new float array (same layout), else the zero fdata."""
    # First what most results are, a small C-contiguous float64 array: what ``pool.zeros``
    # gives it (``np.zeros``), without its calls (an array form's result in a loop, each step).
    if type(y) is np.ndarray and y.dtype is _FLOAT64 and y.nbytes < pool.LARGE_BYTES:
        if y.flags.c_contiguous:
            return np.zeros(y.shape, _FLOAT64)
    if isinstance(y, np.ndarray):
        if y.dtype.kind not in "fc":
            if y.dtype.kind == "O":
                refuse_object_array(y)  # a number with a derivative would lose it there
            return NT
        # What ``np.zeros_like`` gives a C-contiguous array, at a fifth of the cost; a large one
        # recycled (the quick paths of the elementwise and matmul rules give it back).
        if y.flags.c_contiguous:
            return pool.zeros(y.shape, y.dtype, y.nbytes)
        return np.zeros_like(y, subok=False)
    if isinstance(y, _PLAIN_NUMBERS) or y is None:
        return NT
    return zero_fdata(y)


def cotangent(y_fdata: t.Any, dy: t.Any) -> t.Any:
    """The cotangent of a result: its fdata for an array, else the rdata received; None if zero."""
    if isinstance(y_fdata, np.ndarray):
        return y_fdata
    return None if dy is NT else dy


def part_cotangents(zf: t.Any, dz: t.Any, n: int) -> list[t.Any]:
    """The cotangents of the ``n`` parts of a tuple result (None for a zero one): arrays' from
    its fdata, numbers' from its rdata."""
    fs = zf if isinstance(zf, tuple) else (NT,) * n
    ds = dz if isinstance(dz, tuple) else (NT,) * n
    return [cotangent(f, d) for f, d in zip(fs, ds)]


def needs(x: CD) -> bool:
    """Whether operand ``x`` takes a gradient (so the rule must compute one)."""
    p = x.primal
    if isinstance(p, np.ndarray):
        return isinstance(x.fdata, np.ndarray)
    return isinstance(p, _INEXACT_SCALARS)


def conj(p: t.Any) -> t.Any:
    """Conjugate of a partial derivative; a no-op (no copy) for real values."""
    if isinstance(p, _COMPLEX_SCALARS) or (isinstance(p, np.ndarray) and p.dtype.kind == "c"):
        return np.conj(p)
    return p


def unbroadcast(g: t.Any, shape: tuple[int, ...]) -> t.Any:
    """Sum ``g`` over the axes along which an operand of ``shape`` was broadcast to ``g``'s shape.

    The one place where broadcasting is undone: every rule whose operands broadcast calls it.
    The result broadcasts to ``shape`` (it may still have size-1 axes where ``shape`` has more,
    as the cotangent of a reduction does); adding it into fdata broadcasts it there.  A ``g``
    with fewer axes than ``shape`` is left as it is, for the same reason.
    """
    gshape = np.shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead < 0:
        return g
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if not axes:
        return g
    if type(g) is np.ndarray:  # the ufunc's method: np.sum's dispatch costs more than a small sum
        summed = np.add.reduce(g, axis=axes, keepdims=True)
    else:
        summed = np.sum(g, axis=axes, keepdims=True)
    return summed.reshape(summed.shape[lead:]) if lead else summed


def to_shape(g: t.Any, shape: tuple[int, ...]) -> t.Any:
    """``g`` summed to exactly ``shape``: the cotangent of an operand of that shape, passed as a
    value (where ``unbroadcast`` may leave size-1 axes that adding into fdata would broadcast)."""
    if type(g) is np.ndarray and g.shape == shape:
        return g
    summed = unbroadcast(g, shape)
    if np.shape(summed) == shape:
        return summed
    return np.broadcast_to(summed, shape)


def scalar_rdata(x: object, g: t.Any) -> t.Any:
    """The rdata of scalar ``x`` for gradient ``g`` (a number or an array to sum), of x's class."""
    if not isinstance(x, _INEXACT_SCALARS):
        return NT
    if isinstance(g, np.ndarray) and g.ndim:
        g = g.sum()
    if isinstance(x, _COMPLEX_SCALARS):
        return (type(x) if isinstance(x, np.generic) else complex)(g)
    return (type(x) if isinstance(x, np.generic) else float)(g.real)


def add_into(fdata: Array, g: t.Any) -> None:
    """``fdata += g`` (in place), g summed to fdata's shape; a real fdata takes g's real part."""
    if type(g) is np.ndarray and g.shape == fdata.shape:  # the common case: nothing to undo
        if g.dtype.kind != "c" or fdata.dtype.kind == "c":
            np.add(fdata, g, out=fdata)
            return
    if not isinstance(g, np.ndarray):
        # A scalar broadcasts to any shape; ``unbroadcast`` and ``np.iscomplexobj`` would make
        # an array of it (``float(x)`` of a 0-d array must allocate nothing).
        if fdata.dtype.kind != "c" and isinstance(g, _COMPLEX_SCALARS):
            g = g.real
        np.add(fdata, g, out=fdata)
        return
    if g.ndim == fdata.ndim + 1 and g.shape[1:] == fdata.shape and g.dtype.kind == "f":
        # A row added to every row of a matrix (a bias): one sum, no reshape.
        np.add(fdata, np.add.reduce(g, axis=0), out=fdata)
        return
    g = unbroadcast(g, fdata.shape)
    complex_g = g.dtype.kind == "c" if type(g) is np.ndarray else np.iscomplexobj(g)
    if fdata.dtype.kind != "c" and complex_g:
        g = np.real(g)
    np.add(fdata, g, out=fdata)


def send(x: CD, g: t.Any) -> t.Any:
    """Deliver gradient ``g`` to operand ``x``: into its fdata (returns ``NoTangent()``) or as
    its rdata.  ``g`` None means zero."""
    p = x.primal
    if isinstance(p, np.ndarray):
        if g is not None and isinstance(x.fdata, np.ndarray):
            add_into(x.fdata, g)
        return NT
    if g is None:
        return zero_rdata(p) if isinstance(p, _INEXACT_SCALARS) else NT
    return scalar_rdata(p, g)


def zero_for(x: CD) -> t.Any:
    """The rdata an operand gets when no gradient reaches it."""
    p = x.primal
    return zero_rdata(p) if isinstance(p, _INEXACT_SCALARS) else NT


def view_fdata(y: Array, view: Array, of: tuple[t.Any, t.Any] | None = None) -> Array:
    """Check that ``view``, made from an argument's fdata the way ``y`` was made from the
    argument, is laid out as ``y``: fdata has its primal's strides, so the same view of it is
    the same memory pattern (docs/tangents.md).  A mismatch is a bug upstream, and silently
    copying instead would lose every gradient written through the view.

    Two arrays are exempt, whose fdata cannot mirror them: an empty ``y`` (no element, its
    strides are arbitrary), and a view of an argument ``of = (primal, fdata)`` whose own fdata
    does not mirror it (a ``broadcast_to`` result, an overlapping ``sliding_window_view``: new
    contiguous fdata, since repeats sharing one fdata element would lose cotangents).  The same
    view of that fdata still pairs each element of ``y`` with its own tangent, which is all a
    view's fdata does there: nothing writes through such a primal into its argument's memory
    (docs/tangents.md), and rules that rebuild a view from strides check ``mirrors`` first."""
    if view.shape != y.shape or (not mirrors(y, view) and y.size and (of is None or mirrors(*of))):
        raise ValueError(
            f"fdata of shape {view.shape} and strides {view.strides} does not mirror its primal "
            f"(shape {y.shape}, strides {y.strides}): fdata must have its primal's layout"
        )
    return view


def mirrors(primal: t.Any, fdata: t.Any) -> bool:
    """Whether array ``fdata`` has array ``primal``'s layout: its shape, and its strides along
    every axis longer than 1 (an axis of length 1 or 0 steps nowhere)."""
    if not (isinstance(primal, np.ndarray) and isinstance(fdata, np.ndarray)):
        return True  # (nothing to mirror: a number, an inactive operand)
    if primal.shape != fdata.shape:
        return False
    return all(n <= 1 or a == b for n, a, b in zip(primal.shape, primal.strides, fdata.strides))


def shares_memory(y: object, x: object) -> bool:
    """Whether array ``y`` is a view into ``x``'s memory (a bounds check: a new array never is)."""
    return (
        isinstance(y, np.ndarray)
        and isinstance(x, np.ndarray)
        and y.size > 0
        and bool(np.may_share_memory(y, x))
    )


@no_derivative
def no_derivative_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """The rule of a call whose result has no derivative (indices, counts, rounding): it runs
    the call, gives the result zero fdata, and every float operand a zero rdata of its class.
    (``zero_derivative``'s generated rule gives ``NoTangent()`` to float operands too.)"""
    y = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    operands = (*args, *kwargs.values())
    rdata = (NT, *(zero_for(a) for a in operands))
    # A result that is an argument (``np.fix`` of an int array may be) keeps its fdata.
    fdata = next((a.fdata for a in operands if a.primal is y), None)
    return CoDual(y, new_fdata(y) if fdata is None else fdata), lambda dy: rdata


def linear_rrule(
    f: CD, x: CD, args: tuple[CD, ...], kwargs: dict[str, CD], adjoint: t.Callable[[Array], t.Any]
) -> RuleResult:
    """The rule of a call ``f(x, *args, **kwargs)`` linear in ``x``, the other operands
    constants (an axis, a length, a mode): the result gets new fdata, and the pullback sends
    ``adjoint(g)`` of the result's cotangent ``g`` to x (the real part to a real x)."""
    y = f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    yf = new_fdata(y)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is None or not needs(x):
            return (NT, zero_for(x), *rest)
        return (NT, send(x, adjoint(np.asarray(g))), *rest)

    return CoDual(y, yf), pullback


def bind(
    names: t.Sequence[str],
    args: t.Sequence[CD],
    kwargs: t.Mapping[str, CD],
    defaults: t.Mapping[str, object],
    what: str,
) -> dict[str, object]:
    """The primal values of optional parameters passed by position (in ``names`` order) or by
    keyword, with ``defaults`` for the others.  Unknown parameters are refused
    (``UnsupportedArgumentError``, a ``TypeError``)."""
    if len(args) > len(names):
        raise TypeError(f"{what}: too many positional arguments")
    bound: dict[str, object] = dict(defaults)
    for name, a in zip(names, args):
        bound[name] = a.primal
    for name, a in kwargs.items():
        if name not in names:
            raise UnsupportedArgumentError(
                f"{what}: gibbous's rule does not support the argument {name!r}"
            )
        bound[name] = a.primal
    return bound



def element_numbers(shape: tuple[int, ...], first: int) -> Array:
    """``first, first + 1, ...`` laid out in ``shape``: an operand's elements by number.  Passed
    through a call that moves elements around (``np.insert``, ``np.r_``) in the operand's place,
    they show where each element went, by NumPy's own rules (broadcasting and casting
    included)."""
    size = math.prod(shape)
    return np.arange(first, first + size, dtype=np.intp).reshape(shape)


def collect(g: Array, routes: Array, n: int) -> Array:
    """Entry k of the result: the sum of ``g`` over the positions where ``routes`` (shaped like
    ``g``) is k, for k < n; an element that went to several places gets all their cotangents."""
    acc = np.zeros(n, dtype=g.dtype)
    np.add.at(acc, routes, g)
    return acc


@attrs.frozen
class Scratch:
    """The state of a stateful rule that only needs scratch arrays: kept between calls of one
    call site so that a warm call reuses them (docs/rules.md, "A stateful rule").  ``fit``
    gives the same state while the wanted shapes and dtypes stay, a new one when they change."""

    arrays: tuple[Array, ...] = ()

    @classmethod
    def fit(
        cls, state: Scratch | None, *specs: tuple[tuple[int, ...], np.dtype[t.Any]]
    ) -> Scratch:
        """A state with one empty array per ``(shape, dtype)`` of ``specs``."""
        if state is not None and len(state.arrays) == len(specs):
            # A loop, not all() over a generator: this runs on every call of a warm rule.
            for a, (s, d) in zip(state.arrays, specs):
                if a.shape != s or a.dtype != d:
                    break
            else:
                return state
        return cls(tuple(np.empty(s, d) for s, d in specs))


NO_SCRATCH = Scratch()


def writable(view: Array) -> Array:
    """``view`` (of an fdata) made writable: NumPy gives some views read-only (``np.diagonal``),
    but a view of an fdata is where later rules add cotangents, so it must take writes.  Its
    base must be writable (an fdata is)."""
    view.flags.writeable = True
    return view


@twin_helper  # (tangent functions call it: derived again in a Hessian-vector product)
def quotient(x: t.Any, y: t.Any) -> t.Any:
    """``x / y`` where ``y`` is non-zero, 0 where it is zero (as ``np.divide`` with ``out=``
    zeros and ``where=y != 0``, in calls reverse mode differentiates)."""
    nonzero = y != 0
    return np.where(nonzero, x / np.where(nonzero, y, 1), 0)
