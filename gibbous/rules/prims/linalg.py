"""Products: ``matmul`` (``@``), ``dot``, ``inner``, ``outer``, and ``np.linalg.norm``.

Every combination of 1-D, 2-D and batched operands: a 1-D operand of ``matmul`` is a row
(left) or a column (right) for the product and loses that axis again in its gradient;
gradients of broadcast batch axes are summed back (``unbroadcast``).  Complex products are
holomorphic in each operand: ``z = a @ b`` gives ``a`` the gradient ``g @ conj(b).T``.
``np.matmul(A, B, out=C)`` is the stateful rule of ``gibbous.rules.inplace``.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.rules.prims import elementwise as E
from gibbous.rules.prims.common import (
    ARRAY,
    CD,
    NT,
    NUMBER,
    NUMERIC,
    Array,
    RuleResult,
    bind,
    conj,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    zero_for,
)
from gibbous.rules.prims.numpy_reductions import expand, normalize_axes
from gibbous.rules.registry import primitive
from gibbous.rules.tangents import CoDual


def _swap(x: Array) -> Array:
    return np.swapaxes(x, -1, -2)


def matmul_grads(a: Array, b: Array, g: t.Any, want_a: bool, want_b: bool) -> tuple[t.Any, t.Any]:
    """The gradients of ``a @ b`` for cotangent ``g``, before summing over broadcast axes."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = np.asarray(g)
    if a.ndim == 1:
        g2 = np.expand_dims(g2, -1 if b.ndim == 1 else -2)
    if b.ndim == 1:
        g2 = np.expand_dims(g2, -1)
    ga = gb = None
    if want_a:
        ga = g2 @ conj(_swap(b2))
        if a.ndim == 1:
            ga = ga[..., 0, :]
    if want_b:
        gb = conj(_swap(a2)) @ g2
        if b.ndim == 1:
            gb = gb[..., :, 0]
    return ga, gb


def matmul_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    zf = new_fdata(z)
    if _plain_float64(ap) and _plain_float64(bp) and ap.ndim == 2 and bp.ndim <= 2:
        da, db = a.fdata, b.fdata
        want_a, want_b = type(da) is np.ndarray, type(db) is np.ndarray

        def matrix_pullback(dz: t.Any) -> tuple[t.Any, ...]:
            # A matrix times a matrix or a vector, real: no broadcasting, no conjugates.
            g = zf
            if bp.ndim == 2:
                if want_a:
                    np.add(da, g @ bp.T, out=da)
                if want_b:
                    np.add(db, ap.T @ g, out=db)
            else:
                if want_a:
                    np.add(da, g[:, None] * bp, out=da)
                if want_b:
                    np.add(db, g @ ap, out=db)
            return _NOTHING_3

        return CoDual(z, zf), matrix_pullback

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        ga, gb = matmul_grads(ap, bp, g, needs(a), needs(b))
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), pullback


_NOTHING_3 = (NT, NT, NT)


def _plain_float64(x: object) -> t.TypeGuard[Array]:
    return type(x) is np.ndarray and x.dtype == np.float64


for _fn in (np.matmul, operator.matmul):
    primitive(_fn, ARRAY, ARRAY)(matmul_rrule)


def _tensordot_grads(
    a: Array, b: Array, g: t.Any, want_a: bool, want_b: bool
) -> tuple[t.Any, t.Any]:
    """``np.dot`` with ``b`` of three or more axes: ``z[I, J, m] = sum_k a[I, k] b[J, k, m]``."""
    p, q = a.ndim, b.ndim
    g = np.asarray(g)
    ga = gb = None
    if want_a:  # sum over J and m: the last (q - 1) axes of g
        b_axes = [*range(q - 2), q - 1]
        ga = np.tensordot(g, conj(b), axes=(list(range(p - 1, g.ndim)), b_axes))
    if want_b:  # sum over I; the result is (k, J..., m): move k before m
        gb = np.tensordot(conj(a), g, axes=(list(range(p - 1)), list(range(p - 1))))
        gb = np.moveaxis(gb, 0, -2)
    return ga, gb


def dot_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``np.dot(a, b)`` and ``a.dot(b)``: a product by a scalar, a matrix product for ``b`` of
    at most two axes, else a sum over a's last and b's second-to-last axis."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        if np.ndim(ap) == 0 or np.ndim(bp) == 0:
            ga = E.g_times_y(g, ap, bp, z) if needs(a) else None
            gb = E.g_times_x(g, ap, bp, z) if needs(b) else None
        elif bp.ndim <= 2:
            ga, gb = matmul_grads(ap, bp, g, needs(a), needs(b))
        else:
            ga, gb = _tensordot_grads(ap, bp, g, needs(a), needs(b))
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), pullback


for _x in NUMERIC:
    for _y in NUMERIC:
        primitive(np.dot, _x, _y)(dot_rrule)
    primitive(np.ndarray.dot, ARRAY, _x)(dot_rrule)


def inner_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``np.inner(a, b)``: ``z[I, J] = sum_k a[I, k] b[J, k]`` (a product for a scalar)."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        ga = gb = None
        if np.ndim(ap) == 0 or np.ndim(bp) == 0:
            ga = E.g_times_y(g, ap, bp, z) if needs(a) else None
            gb = E.g_times_x(g, ap, bp, z) if needs(b) else None
        else:
            i, j = ap.ndim - 1, bp.ndim - 1
            g = np.asarray(g)
            if needs(a):
                ga = np.tensordot(g, conj(bp), axes=(list(range(i, i + j)), list(range(j))))
            if needs(b):
                gb = np.tensordot(g, conj(ap), axes=(list(range(i)), list(range(i))))
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), pullback


def outer_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``np.outer(a, b)`` of the flattened operands."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        fa, fb = np.ravel(ap), np.ravel(bp)
        ga = (g @ conj(fb)).reshape(np.shape(ap)) if needs(a) else None
        gb = (conj(fa) @ g).reshape(np.shape(bp)) if needs(b) else None
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), pullback


for _x in NUMERIC:
    for _y in NUMERIC:
        primitive(np.inner, _x, _y)(inner_rrule)
        primitive(np.outer, _x, _y)(outer_rrule)

# --------------------------------------------------------------------------------------------
# np.linalg.norm: the 2-norm of vectors, the Frobenius norm of matrices

NORM_PARAMETERS = ("ord", "axis", "keepdims")


def norm_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.linalg.norm(x, axis=..., keepdims=...)`` with the default ``ord``: the square root
    of the sum of squared magnitudes over the axes; the gradient is ``g * x / norm`` (0 where
    the norm is 0, a subgradient)."""
    bound = bind(NORM_PARAMETERS, args, kwargs, {"ord": None, "axis": None}, "norm")
    xp = x.primal
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    zf = new_fdata(z)
    keepdims = bool(bound.get("keepdims", False))
    axes = normalize_axes(bound["axis"], np.ndim(xp))
    order = bound["ord"]
    vector = len(axes) == 1
    if not (order is None or (order == "fro" and not vector) or (order == 2 and vector)):
        raise NotImplementedError(f"np.linalg.norm with ord={order!r}: no rule")
    rdata = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None or not needs(x):
            return (NT, zero_for(x), *rdata)
        n = expand(z, axes, keepdims)
        ratio = np.divide(xp, n, out=np.zeros_like(xp, dtype=np.result_type(xp, n)), where=n != 0)
        return (NT, send(x, expand(g, axes, keepdims) * ratio), *rdata)

    return CoDual(z, zf), pullback


primitive(np.linalg.norm, ARRAY, ...)(norm_rrule)
primitive(np.linalg.norm, NUMBER, ...)(norm_rrule)
