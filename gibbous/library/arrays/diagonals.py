"""Diagonals: ``diag``, ``diagflat``, ``diagonal``, ``trace``; ``tril``/``triu`` are in
``shapes``.

A trace gives a scalar without allocating an array, so its rule must not allocate either (the
audit's policy): it adds its cotangent into a view of the fdata's diagonal.  ``np.diagonal``
(and ``np.diag`` of a matrix) returns a read-only view: its fdata is the same view of the
argument's fdata, made writable, so that later rules add into the argument's fdata through it.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.rules import frules
from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    RuleResult,
    bind,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    view_fdata,
    writable,
    zero_for,
)
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

DIAGONAL_PARAMETERS = ("offset", "axis1", "axis2")
TRACE_PARAMETERS = ("offset", "axis1", "axis2", "dtype", "out")


def diagonal_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.diagonal(a, offset, axis1, axis2)``, ``a.diagonal(...)`` and ``np.diag`` of a
    matrix: a read-only view, whose fdata is the same view of the argument's fdata (writable):
    the cotangent lands in the argument's fdata, and the pullback adds nothing."""
    xp = x.primal
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    rdata = nothing(2 + len(args) + len(kwargs))
    if isinstance(x.fdata, np.ndarray):
        if f.primal is np.diag:
            k = bind(("k",), args, kwargs, {"k": 0}, "diag")["k"]
            view = np.diagonal(x.fdata, t.cast(int, k))
        else:
            bound = bind(DIAGONAL_PARAMETERS, args, kwargs, {}, "diagonal")
            view = np.diagonal(x.fdata, **t.cast(dict[str, int], bound))
        zf: t.Any = view_fdata(z, writable(view), of=(xp, x.fdata))
    else:
        zf = new_fdata(z) if f.primal is not np.diag else NT
    return CoDual(z, zf), lambda dz: rdata


def to_diagonal_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.diag(v, k)`` of a vector and ``np.diagflat(v, k)``: a new matrix with ``v`` (flattened)
    on its k-th diagonal; ``v`` gets that diagonal of the cotangent."""
    k = t.cast(int, bind(("k",), args, kwargs, {"k": 0}, "diag")["k"])
    xp = x.primal
    z = f.primal(xp, *(a.primal for a in args), **{k_: v.primal for k_, v in kwargs.items()})
    zf = new_fdata(z)
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if not isinstance(zf, np.ndarray) or not needs(x):
            return (NT, zero_for(x), *rest)
        return (NT, send(x, np.diagonal(zf, k).reshape(np.shape(xp))), *rest)

    return CoDual(z, zf), pullback


def diag_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.diag``: the diagonal of a matrix (a view), or a matrix from a vector."""
    if np.ndim(x.primal) == 2:
        return diagonal_rrule(f, x, *args, **kwargs)
    return to_diagonal_rrule(f, x, *args, **kwargs)


def trace_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.trace(a, offset, axis1, axis2, dtype)`` and ``a.trace(...)``: the cotangent is
    added into the diagonal of the fdata through a writable view of it, so a matrix's trace
    (a scalar) allocates nothing."""
    bound = bind(TRACE_PARAMETERS, args, kwargs, {}, "trace")
    if bound.get("out") is not None:
        raise NotImplementedError("trace with out=: no rule")
    where = {k: t.cast(int, v) for k, v in bound.items() if k in DIAGONAL_PARAMETERS}
    xp = x.primal
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    zf = new_fdata(z)
    rdata = nothing(2 + len(args) + len(kwargs))
    dx = x.fdata

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is not None and type(dx) is np.ndarray:
            diagonal = writable(np.diagonal(dx, **where))
            if isinstance(g, np.ndarray):
                g = g[..., None]  # the diagonal runs along the view's last axis
            if dx.dtype.kind != "c" and np.iscomplexobj(g):
                g = g.real
            np.add(diagonal, g, out=diagonal)
        return rdata

    return CoDual(z, zf), pullback


primitive(np.diagonal, ARRAY, ...)(diagonal_rrule)
primitive(np.ndarray.diagonal, ARRAY, ...)(diagonal_rrule)
primitive(np.diag, ARRAY, ...)(diag_rrule)
frules.register_linear([np.diagonal, np.ndarray.diagonal, np.diag])
primitive(np.diagflat, ARRAY, ...)(to_diagonal_rrule)
frules.register_linear([np.diagflat], most=2)  # (v, k): linear in v
primitive(np.trace, ARRAY, ...)(trace_rrule)
primitive(np.ndarray.trace, ARRAY, ...)(trace_rrule)
frules.register_linear([np.trace, np.ndarray.trace], most=5)  # (a, offset, axis1, axis2, dtype, out)
