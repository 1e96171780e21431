"""Inline forms: what the AD pass writes in place of a rule call.

A rule call costs a ``CoDual`` for the result, a pullback closure, a tuple, a stack push and,
on the way back, a call of the pullback and a tuple of rdata: a dozen Python objects for one
``a * b`` on floats.  For the primitives that dominate scalar loops (operators, ``math``
functions and ``x[i]`` on float arrays), the AD pass instead writes the primal call itself
into the forward program, saves the few values the derivative needs, and writes the
derivative's arithmetic into the reverse program.  The numbers are those of the registered
rule: the derivatives are the same formulas (``gibbous.rules.formulas``), written out as
expressions, or called as their float rendering where they branch.  ``float(x)`` and whole
float64 arrays summed or averaged to a float (``np.sum(x)``, ``x.mean()``) are written out too:
the array's fdata takes the adjoint in place (``dx += dy``).

A form is declared with the registration it stands for (``primitive(..., inline=form)``), on
the variant whose static types make it exact (``float_binary`` of ``operator.mul``:
``elementwise_variants``; ``real_array_element`` of ``x[i]``: ``indexing``).  So the one lookup
that finds a call's rule finds its form: a rule a user registers for ``math.sin`` has none and
is called as a rule.  The AD pass writes a form out where the call's result is a float
(``Session.inline``), so every adjoint is a plain float.

``InlineRule.saves`` names what the reverse needs, by operand: ``("primal", i)`` (argument
``i``), ``("fdata", i)``, ``("result", -1)``, or ``("site", -1)``: the site's buffers, whose
scratch arrays the adjoint writes its temporaries into (``gibbous.rules.buffers``);
``adjoint(b, saved, dy)`` writes the reverse arithmetic with the builder ``b`` and returns
one adjoint per argument (``None``: none).

**Cotangents as values.**  An array form's result has fdata that its uses add into and its
adjoint reads (``("result_fdata", -1)``).  Where the result has one use, the AD pass passes
its cotangent as a value instead (``gibbous.reverse.primal_pass``, "by value"): no zeros made in
the forward program, no addition into them in the reverse.  A form that takes part declares
``values``: its adjoint finds ``WANT`` where an operand's fdata would be (``("fdata", i)``)
and returns that operand's cotangent (an array of its shape) in its place; and it reads its
own result's cotangent, which may then be such a value, without writing into it or giving it
to the pool: a value may be shared (``a + b`` passes the same array on to both) or a
read-only broadcast.
"""

from __future__ import annotations

import functools
import operator
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.formulas import Expr
from gibbous.rules.buffers import SiteBuffers, scratch
from gibbous.rules import render

F64 = T.Float("float64")
# ("primal", i), ("fdata", i), ("result", -1), ("result_fdata", -1), ("site", -1) or
# ("sums", -1)
Save = tuple[str, int]
Adjoint = t.Callable[[Builder, t.Sequence[Value], Value], t.Sequence[Value | None]]


@attrs.frozen
class InlineRule:
    name: str
    saves: tuple[Save, ...]
    adjoint: Adjoint
    arity: int = 1  # of the calls it applies to (``math.log`` has another rule for two)
    #: The result is a float64 array: the forward program gives it new fdata (its cotangent
    #: arrives there, not as rdata), and the adjoint runs whatever the rdata.
    array: bool = False
    #: For an array form, what makes the result's fdata instead of new zeros:
    #: ``fdata(result, *values of fdata_saves)`` (a view of an operand's fdata, for a view).
    fdata: t.Callable[..., t.Any] | None = None
    fdata_saves: tuple[Save, ...] = ()
    #: The form passes cotangents as values where the AD pass asks (see the module's doc).
    values: bool = False
    #: What the forward program calls instead of the callee, and the constants it passes after
    #: the operands: the same computation, bit for bit, through fewer Python layers
    #: (``np.sum(x)`` of a whole array is ``np.add.reduce(x, None)`` once NumPy has looked
    #: at its keywords).
    primal: tuple[t.Callable[..., t.Any], tuple[object, ...]] | None = None
    #: A form that adds operand ``i``'s outer products into its fdata later, in one product
    #: (``gibbous.rules.outer_sums``), and the operand ``i``: what the AD pass writes instead
    #: where nothing reads that fdata before the reverse program returns
    #: (``gibbous.reverse.defer``).  Its saves end with ``("sums", -1)``, the site's stack.
    deferred: tuple[int, InlineRule] | None = None


class _Want:
    """Stands where an operand's fdata would be: its cotangent is wanted as a value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "WANT"


WANT = _Want()
runtime.register_object(WANT, "WANT")  # a path for the IR's text


def is_want(v: object) -> bool:
    return isinstance(v, Constant) and v.value is WANT


def called_form(
    name: str,
    helper: t.Callable[..., t.Any],
    saves: tuple[Save, ...],
    scalars: t.Sequence[bool],
    *,
    values: bool = False,
) -> InlineRule:
    """An array form: the reverse program calls ``helper(*saved)``, which adds the gradients of
    the array operands into their fdata and returns a tuple of the scalar operands' rdata
    (``scalars[i]``: operand ``i`` is a scalar; its adjoint is item ``i``).  With ``values``,
    an array operand whose fdata is ``WANT`` gets its cotangent as item ``i``."""
    where = {s[1]: k for k, s in enumerate(saves) if s[0] == "fdata"}

    def adjoint(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
        result = b.call(helper, *saved, type=T.ANY)
        wanted = [i in where and is_want(saved[where[i]]) for i in range(len(scalars))]
        return [
            b.call(operator.getitem, result, i, type=F64 if scalar else T.ANY)
            if scalar or want
            else None
            for i, (scalar, want) in enumerate(zip(scalars, wanted))
        ]

    return InlineRule(name, saves, adjoint, len(scalars), array=True, values=values)


def _call(b: Builder, fn: object, *args: object) -> Value:
    return b.call(fn, *args, type=F64)


# --------------------------------------------------------------------------------------------
# Derivatives written out: the registered rule's formula (``gibbous.rules.formulas``), saving
# the operands and result it reads; a formula that branches is its float rendering, called.

_SAVES: dict[str, Save] = {"x": ("primal", 0), "y": ("primal", 1), "z": ("result", -1)}


def formula_form(
    name: str,
    formulas: t.Sequence[Expr],
    floats: t.Sequence[t.Callable[..., t.Any]],
    write: bool = True,
) -> InlineRule:
    """The form of a scalar rule from its operands' formulas: written out as arithmetic where
    the formulas allow (and ``write``), else ``floats`` (their float renderings, or adjoints
    of the same signature ``(dy, *operands, z)``) called on the saved values."""
    arity = len(formulas)
    if write and all(map(render.inline_expressible, formulas)):
        used = set().union(*[f.variables() for f in formulas])
        names = [n for n in "xyz" if n in used]

        def written(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value]:
            env = {"g": dy, **dict(zip(names, saved))}
            call = functools.partial(_call, b)
            return [render.inline_adjoint(f, call, env) for f in formulas]

        return InlineRule(name, tuple(_SAVES[n] for n in names), written, arity)
    saves = (_SAVES["x"], _SAVES["z"]) if arity == 1 else tuple(_SAVES.values())

    def called(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value]:
        return [_call(b, fn, dy, *saved) for fn in floats]

    return InlineRule(name, saves, called, arity)


#: ``float(x)`` of a float: the adjoint passes.
FLOAT = InlineRule("float", (), lambda b, saved, dy: (dy,))


def _add_at(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
    """``dx[i] += dy``: an element's adjoint goes into its array's fdata."""
    fdata, index = saved
    old = _call(b, operator.getitem, fdata, index)
    b.call(operator.setitem, fdata, index, _call(b, operator.add, old, dy), type=T.NONE)
    return (None, None)


#: ``x[i]`` of a float64 array, one int per axis: ``dx[i] += dy``.
GETITEM = InlineRule("getitem", (("fdata", 0), ("primal", 1)), _add_at, 2)


def _add_all(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
    """``dx += dy``: every element of a summed array gets the sum's adjoint, in place (or, by
    value, an array of ``dy``)."""
    fdata, x, site = saved
    if is_want(fdata):
        return (b.call(spread, dy, x, site, type=x.type),)
    b.call(operator.iadd, fdata, dy, type=fdata.type)
    return (None,)


def _add_mean(b: Builder, saved: t.Sequence[Value], dy: Value) -> t.Sequence[Value | None]:
    fdata, x, site = saved
    size = b.call(getattr, x, "size", type=T.INT)
    share = _call(b, operator.truediv, dy, size)
    if is_want(fdata):
        return (b.call(spread, share, x, site, type=x.type),)
    b.call(operator.iadd, fdata, share, type=fdata.type)
    return (None,)


def spread(
    dy: float, x: np.ndarray[t.Any, t.Any], site: SiteBuffers | None = None
) -> np.ndarray[t.Any, t.Any]:
    """An array of ``x``'s shape full of ``dy``: the site's scratch for a small one, a
    read-only view of one number for a large one (writing a million copies costs more than the
    gradient's use)."""
    if x.size <= 4096:
        out = scratch(site, 0, x.shape)
        if out is None:
            out = np.empty(x.shape)
        out.fill(dy)
        return out
    one = scratch(site, 1, ())
    if one is None:
        one = np.empty(())
    one[()] = dy
    out = np.ndarray(x.shape, np.float64, one, 0, (0,) * x.ndim)
    out.flags.writeable = False
    return out


runtime.register_object(spread, "spread")

#: ``np.sum(x)`` and ``np.mean(x)`` of a whole float64 array: its fdata takes the adjoint.
_add_reduce = np.add.reduce
runtime.register_object(_add_reduce, "add_reduce")  # a path for the IR's text
SUM = InlineRule(
    "sum",
    (("fdata", 0), ("primal", 0), ("site", -1)),
    _add_all,
    values=True,
    primal=(_add_reduce, (None,)),  # (np.sum's own call, for an ndarray and no keywords)
)
MEAN = InlineRule("mean", (("fdata", 0), ("primal", 0), ("site", -1)), _add_mean, values=True)
