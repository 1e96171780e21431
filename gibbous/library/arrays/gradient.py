"""``np.gradient(f, *varargs, axis=None, edge_order=1)``: finite differences of an array.

Along each axis the result is a banded linear map of ``f`` (central differences inside, one-
sided ones at the two ends), so ``f`` gets the transposed stencil applied to the cotangent.
The stencil's coefficients are NumPy's, written once for spacings ``h1`` (before a point) and
``h2`` (after it); uniform spacing is the case ``h1 == h2``, where they reduce to NumPy's
uniform ones.  ``edge_order`` 1 and 2.

Spacings are differentiable too.  A scalar spacing ``h`` scales the result by ``1/h``, so it
gets ``-<g, out>/h``.  A coordinate array ``x`` enters through its differences; the derivative
of each coefficient with respect to its ``h1`` and ``h2`` is taken by a complex step (the
coefficients are rational functions of real spacings, so ``Im c(h + i e) / e`` is their
derivative to rounding), and the differences send it back to the coordinates.

One axis gives an array; several a tuple of arrays, whose fdata is the tuple of their fdata.

Forward mode: linear in ``f`` for spacings without tangents, ``np.gradient(df, *varargs)``
(a spacing with a tangent has no forward rule yet).
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.library.common import (
    ANY,
    CD,
    NT,
    Array,
    RuleResult,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.library.items import send_to_value
from gibbous.rules import frules
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

# A row of the stencil: (column, coefficient); columns of the end rows count from the end.
Row = list[tuple[int, t.Any]]


def _interior(h1: t.Any, h2: t.Any) -> tuple[t.Any, t.Any, t.Any]:
    """Coefficients of f[i-1], f[i], f[i+1] for the points inside."""
    return -h2 / (h1 * (h1 + h2)), (h2 - h1) / (h1 * h2), h1 / (h2 * (h1 + h2))


def _first(h1: t.Any, h2: t.Any, edge_order: int) -> Row:
    if edge_order == 1:
        return [(0, -1 / h1), (1, 1 / h1)]
    s = h1 + h2
    return [(0, -(2 * h1 + h2) / (h1 * s)), (1, s / (h1 * h2)), (2, -h1 / (h2 * s))]


def _last(h1: t.Any, h2: t.Any, edge_order: int) -> Row:
    if edge_order == 1:
        return [(-2, -1 / h2), (-1, 1 / h2)]
    s = h1 + h2
    return [(-3, h2 / (h1 * s)), (-2, -s / (h1 * h2)), (-1, (2 * h2 + h1) / (h2 * s))]


def _edges(dx: Array, edge_order: int) -> tuple[Row, Row]:
    # With edge_order 1 only dx[0] and dx[-1] enter (two points suffice).
    return (
        _first(dx[0], dx[min(1, len(dx) - 1)], edge_order),
        _last(dx[max(len(dx) - 2, 0)], dx[-1], edge_order),
    )


def _transpose_stencil(grad: Array, g: Array, dx: Array, edge_order: int) -> None:
    """``grad += S^T g`` along axis 0, for the stencil S of spacings ``dx`` (n - 1 of them)."""
    n = grad.shape[0]
    if n > 2:
        lead = (n - 2,) + (1,) * (grad.ndim - 1)
        a, b, c = (np.reshape(v, lead) for v in _interior(dx[:-1], dx[1:]))
        inner = g[1:-1]
        grad[:-2] += a * inner
        grad[1:-1] += b * inner
        grad[2:] += c * inner
    first, last = _edges(dx, edge_order)
    for column, coefficient in first:
        grad[column] += coefficient * g[0]
    for column, coefficient in last:
        grad[column] += coefficient * g[-1]


def _spacing_gradient(g: Array, fm: Array, dx: Array, edge_order: int) -> Array:
    """The gradient of ``Re <g, S(dx) f>`` with respect to the spacings ``dx`` (axis 0)."""
    n = fm.shape[0]
    others = tuple(range(1, fm.ndim))

    def pair(rows: t.Any, columns: t.Any) -> Array:
        axes = others if isinstance(rows, slice) else None  # an end row: one number
        return np.real(np.sum(np.conj(g[rows]) * fm[columns], axis=axes))

    def step(h: Array) -> Array:
        return np.maximum(np.abs(h), 1.0) * 1e-20

    grad = np.zeros(n - 1)
    h1, h2 = dx[:-1], dx[1:]
    if n > 2:
        inner = (pair(slice(1, -1), slice(None, -2)), pair(slice(1, -1), slice(1, -1)),
                 pair(slice(1, -1), slice(2, None)))  # fmt: skip
        e1, e2 = step(h1), step(h2)
        by_h1 = _interior(h1 + 1j * e1, h2)
        by_h2 = _interior(h1, h2 + 1j * e2)
        grad[:-1] += sum(np.imag(c) / e1 * p for c, p in zip(by_h1, inner))
        grad[1:] += sum(np.imag(c) / e2 * p for c, p in zip(by_h2, inner))
    # The end rows: (row, which spacings, coefficients as a function of them).
    ends: list[tuple[int, list[int], t.Callable[[t.Any, t.Any, int], Row]]] = [
        (0, [0, min(1, n - 2)], _first),
        (-1, [max(n - 3, 0), n - 2], _last),
    ]
    for row, (i, j), coefficients in ends:
        u, v = dx[i], dx[j]
        for k, (eu, ev) in ((i, (step(u), 0.0)), (j, (0.0, step(v)))):
            e = eu + ev
            if e == 0:
                continue
            moved = coefficients(u + 1j * eu, v + 1j * ev, edge_order)
            grad[k] += sum(np.imag(c) / e * pair(row, col) for col, c in moved)
    return grad


def _spacings(
    fp: Array, varargs: tuple[CD, ...], axes: tuple[int, ...]
) -> list[tuple[CD | None, Array]]:
    """Per axis: the operand the spacing comes from (None: the default 1) and the n - 1
    spacings along the axis, as NumPy reads ``varargs``."""
    if not varargs:
        given: list[CD | None] = [None] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0].primal) == 0:
        given = [varargs[0]] * len(axes)
    else:
        given = list(varargs)
    found = []
    for axis, c in zip(axes, given):
        n = fp.shape[axis]
        if c is None or np.ndim(c.primal) == 0:
            h = 1.0 if c is None else c.primal
            found.append((c, np.full(n - 1, h, dtype=np.result_type(h, 1.0))))
        else:
            found.append((c, np.diff(np.asarray(c.primal, dtype=np.float64))))
    return found


@primitive(np.gradient, ANY, ...)
def gradient_rrule(f: CD, fx: CD, *varargs: CD, **kwargs: CD) -> RuleResult:
    if set(kwargs) - {"axis", "edge_order"}:
        raise TypeError(f"np.gradient: no argument {sorted(set(kwargs))!r} in gibbous's rule")
    pk = {k: v.primal for k, v in kwargs.items()}
    y = f.primal(fx.primal, *(v.primal for v in varargs), **pk)
    yf = new_fdata(y)
    fp = np.asanyarray(fx.primal)
    axis = kwargs["axis"].primal if "axis" in kwargs else None
    # In the order given (the results come in that order); the primal checked the bounds.
    named = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(range(fp.ndim)) if axis is None else tuple(int(a) % fp.ndim for a in named)
    edge_order = int(kwargs["edge_order"].primal) if "edge_order" in kwargs else 1
    spacings = _spacings(fp, varargs, axes)
    outs = [(y, yf)] if len(axes) == 1 else list(zip(y, yf if isinstance(yf, tuple) else ()))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        grad = None
        spacing_grads: dict[int, t.Any] = {}
        for axis, (out, out_fdata), (c, dx) in zip(axes, outs, spacings):
            g = cotangent(out_fdata, NT)
            if g is None:
                continue
            if grad is None:
                grad = np.zeros(fp.shape, dtype=g.dtype)
            gm = np.moveaxis(g, axis, 0)
            _transpose_stencil(np.moveaxis(grad, axis, 0), gm, dx, edge_order)
            if c is None or not needs(c):
                continue
            if np.ndim(c.primal) == 0:
                part = -np.real(np.vdot(g, out)) / c.primal
            else:
                by_dx = _spacing_gradient(gm, np.moveaxis(fp, axis, 0), dx, edge_order)
                part = np.zeros(len(dx) + 1)
                part[1:] += by_dx
                part[:-1] -= by_dx
            spacing_grads[id(c)] = spacing_grads.get(id(c), 0.0) + part
        rf = zero_for(fx) if grad is None else send_to_value(fx, grad)
        rest = (send(c, spacing_grads.get(id(c))) for c in (*varargs, *kwargs.values()))
        return (NT, rf, *rest)

    return CoDual(y, yf), pullback


frules.register_linear([np.gradient])
