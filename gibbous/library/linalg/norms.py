"""``np.linalg.norm``: vector norms of every order, matrix norms (``"fro"``, ``"nuc"``, 1,
-1, 2, -2, inf, -inf), along axes, and the magnitude of a number.

A norm of a whole array gives a scalar without allocating an array, so its rule must not
allocate either (the audit's policy): it is a stateful rule whose scratch buffer (``Scratch``)
takes the gradient before it is added into the fdata.
"""

from __future__ import annotations

import operator
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules import frules
from gibbous.rules.emit import real_type, static_types
from gibbous.library.common import (
    quotient,
    ARRAY,
    CD,
    NO_SCRATCH,
    NT,
    NUMBER,
    Array,
    RuleResult,
    Scratch,
    bind,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.library.reductions.reductions import expand, normalize_axes, operand_index
from gibbous.rules.registry import Pullback, primitive, stateful_primitive
from gibbous.tangents.model import CoDual

StatefulResult = tuple[CD, Pullback, Scratch]


def _keep(state: Scratch | None) -> Scratch:
    """The state to return from a call that used no buffer."""
    return NO_SCRATCH if state is None else state


NORM_PARAMETERS = ("ord", "axis", "keepdims")


def _unit(x: Array) -> Array:
    """``x / |x|`` elementwise (0 at 0): the gradient of ``|x|``."""
    mag = np.abs(x)
    return t.cast(Array, quotient(x, mag))


def _vector_norm_grad(x: Array, n: t.Any, g: t.Any, order: t.Any, axes: tuple[int, ...]) -> t.Any:
    """The gradient of the ``order``-norm over ``axes`` (``n`` and ``g`` with those axes kept)."""
    if order == 0:  # a count of non-zeros
        return None
    if order in (np.inf, -np.inf):  # the largest (smallest) magnitudes share the cotangent
        chosen = np.abs(x) == n
        count = np.maximum(np.sum(chosen, axis=axes, keepdims=True), 1)
        return g * _unit(x) * chosen / count
    p = 2.0 if order is None else float(order)
    if p == 2:
        return g * quotient(x, n)
    ratio = quotient(np.abs(x), n)
    return g * _unit(x) * ratio ** (p - 1)


def _order_rdata(
    x: Array,
    z: t.Any,
    g: t.Any,
    order: t.Any,
    axes: tuple[int, ...],
    args: t.Sequence[CD],
    kwargs: t.Mapping[str, CD],
) -> tuple[t.Any, ...]:
    """The rdata of the options; a float ``ord`` p (finite, non-zero) of a vector norm gets
    its derivative: ``d/dp S^(1/p) = n (sum |x|^p log|x| / (p S) - log(S) / p^2)`` with
    ``S = sum |x|^p``."""
    options = (*args, *kwargs.values())
    rdata = [zero_for(a) for a in options]
    i = operand_index(NORM_PARAMETERS, args, kwargs, "ord")
    if i is None or not isinstance(order, float) or order == 0 or not np.isfinite(order):
        return tuple(rdata)
    mag = np.abs(x)
    powered = mag**order
    logs = np.log(np.where(mag != 0, mag, 1.0))  # (0 at 0)
    total = np.sum(powered, axis=axes)
    d = z * (np.sum(powered * logs, axis=axes) / (order * total) - np.log(total) / order**2)
    rdata[i - 2] = send(options[i - 2], np.sum(np.real(np.multiply(g, d))))
    return tuple(rdata)


def _matrix_norm_grad(x: Array, n: t.Any, g: t.Any, order: t.Any) -> t.Any:
    """The gradient of a matrix norm over the last two axes (``n`` and ``g`` with them kept)."""
    if order in (None, "fro", "f"):  # None with two axes is the Frobenius norm too
        return _vector_norm_grad(x, n, g, 2, (-2, -1))
    if order in ("nuc", 2, -2):  # through the SVD: sum of, largest or smallest singular value
        u, _, vh = np.linalg.svd(x, full_matrices=False)
        if order != "nuc":
            k = 0 if order == 2 else u.shape[-1] - 1  # singular values come largest first
            u, vh = u[..., :, k : k + 1], vh[..., k : k + 1, :]
        return g * (u @ vh)
    if order in (1, -1, np.inf, -np.inf):  # the largest (smallest) column or row sum of |x|
        along = -2 if order in (1, -1) else -1  # summed along rows for columns, and back
        sums = np.sum(np.abs(x), axis=along, keepdims=True)
        chosen = sums == n
        count = np.maximum(np.sum(chosen, axis=(-2, -1), keepdims=True), 1)
        return g * _unit(x) * chosen / count
    raise NotImplementedError(f"np.linalg.norm of matrices with ord={order!r}: no rule")


def norm_rrule(state: Scratch | None, f: CD, x: CD, *args: CD, **kwargs: CD) -> StatefulResult:
    """``np.linalg.norm(x, ord, axis, keepdims)``.  The 2-norm of a whole array (the default,
    and ``ord=2`` of vectors, ``"fro"`` of matrices) is a scalar NumPy computes without an
    array: its gradient ``g x / norm`` goes through the state's buffer.  Subgradients: 0 where
    a norm is 0, ties split evenly."""
    bound = bind(NORM_PARAMETERS, args, kwargs, {"ord": None, "axis": None}, "norm")
    xp = x.primal
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    keepdims = bool(bound.get("keepdims", False))
    ndim, order, axis = np.ndim(xp), bound["ord"], bound["axis"]
    matrix = (axis is None and ndim == 2 and order is not None) or (
        isinstance(axis, tuple) and len(axis) == 2
    )
    axes = normalize_axes(axis, ndim)
    rest = tuple(zero_for(a) for a in (*args, *kwargs.values()))  # ord may be a float
    two = order is None or (order == 2 and ndim == 1) or (order in ("fro", "f") and ndim == 2)
    if axis is None and two and isinstance(z, np.generic) and needs(x) and xp.size:
        state = Scratch.fit(state, (xp.shape, xp.dtype))
        (buf,) = state.arrays
        dx, rdata = x.fdata, (NT, NT, *rest)

        def two_norm(dz: t.Any) -> tuple[t.Any, ...]:
            if dz is not NT and z != 0:
                np.multiply(xp, dz / z, out=buf)
                np.add(dx, buf, out=dx)
            return rdata

        return CoDual(z, NT), two_norm, state
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None or not needs(x):
            return (NT, zero_for(x), *rest)
        ge, ne = expand(g, axes, keepdims), expand(z, axes, keepdims)
        if not matrix:
            grad = _vector_norm_grad(xp, ne, ge, order, axes)
            return (NT, send(x, grad), *_order_rdata(xp, z, g, order, axes, args, kwargs))
        # the matrix's rows and columns, in the order given (not sorted: a transpose has
        # other 1- and inf-norms)
        pair = tuple(int(a) % ndim for a in t.cast(tuple[int, int], axis or (0, 1)))
        last = (-2, -1)
        mx, mn, mg = (np.moveaxis(v, pair, last) for v in (xp, ne, ge))
        grad = _matrix_norm_grad(mx, mn, mg, order)
        return (NT, send(x, np.moveaxis(grad, last, pair)), *rest)

    return CoDual(z, zf), pullback, _keep(state)


stateful_primitive(np.linalg.norm, ARRAY, ..., state_type=Scratch)(norm_rrule)


def scalar_norm_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """The norm of a number is its magnitude (for every ``ord``)."""
    xp = x.primal
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    rest = tuple(zero_for(a) for a in (*args, *kwargs.values()))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT or z == 0:
            return (NT, zero_for(x), *rest)
        return (NT, send(x, dz * xp / z), *rest)

    return CoDual(z, new_fdata(z)), pullback


primitive(np.linalg.norm, NUMBER, ...)(scalar_norm_rrule)


def _norm_tangent_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | None:
    """The forward rule of ``np.linalg.norm(x, ord, axis, keepdims)`` of a real array: the
    transpose of the reverse rule's gradient (the same weights: ``_vector_norm_grad``,
    ``_matrix_norm_grad``, with a cotangent of 1) summed against ``dx`` over the reduced
    axes.  The order itself gets no tangent."""
    n = len(types) - len(kwnames)
    if not 1 <= n <= 3 or not set(kwnames) <= set(NORM_PARAMETERS) or any(varied[1:]):
        return None
    if not isinstance(types[0], (T.Array, T.Any)) or isinstance(types[0], T.Array) and not (
        real_type(types[0])
    ):
        return None

    def tangent(z: t.Any, x: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        dx = a[n - 1]
        options = {**dict(zip(NORM_PARAMETERS, a[: n - 1])), **kwargs}
        if dx is None:
            return frules.like(z, None)
        order, axis = options.get("ord"), options.get("axis")
        keepdims: t.Any = bool(options.get("keepdims", False))  # (NumPy 2.5's stubs: Any)
        ndim = np.ndim(x)
        axes = normalize_axes(axis, ndim)
        matrix = (axis is None and ndim == 2 and order is not None) or (
            isinstance(axis, tuple) and len(axis) == 2
        )
        # (no ``np.errstate``: ``quotient`` divides by no zero; and a Hessian-vector product
        # differentiates this again, whose reverse mode fails on that ``with`` here)
        zk = expand(z, axes, keepdims)
        if not matrix:
            w = _vector_norm_grad(x, zk, 1.0, order, axes)
        else:
            pair = tuple(int(k) % ndim for k in t.cast(tuple[int, int], axis or (0, 1)))
            last = (-2, -1)
            moved = _matrix_norm_grad(np.moveaxis(x, pair, last), np.moveaxis(zk, pair, last), 1.0, order)
            w = np.moveaxis(moved, last, pair)
        if w is None:  # (the count of non-zeros: no derivative)
            return frules.like(z, None)
        return frules.like(z, np.sum(w * dx, axis=axes, keepdims=keepdims))

    return frules.checked(tangent, types[:1])


frules.register(np.linalg.norm, _norm_tangent_make)


def _whole_norm_make(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.linalg.norm(x)`` of a real array (the 2-norm of all its elements): its tangent
    ``sum(x dx) / z``, 0 where ``z`` is (the reverse rule's subgradient), written out, so a
    Hessian-vector product goes through it; other orders and axes: ``_norm_tangent_make``."""
    if kwnames or len(types) != 1 or not isinstance(types[0], T.Array):
        return None
    if not real_type(types[0]) or not static_types(types):
        return None

    def emit(b: Builder, z: Value, args: frules.Values, ds: frules.Tangents, kw: frules.Keywords) -> Value:
        x, dx = args[0], ds[0]
        if dx is None:
            return frules.zero(b, z)
        s = b.call(np.sum, b.call(operator.mul, x, dx, type=x.type), type=T.FLOAT)
        # (``z + (z == 0)``: 1 where ``x`` is 0, and there ``s`` is 0 too; scalars, no ``where``)
        at_zero = b.call(operator.eq, z, Constant(0.0), type=T.BOOL)
        safe = b.call(operator.add, z, at_zero, type=T.FLOAT)
        return b.call(operator.truediv, s, safe, type=T.FLOAT)

    return frules.Emit(emit)


frules.register(np.linalg.norm, _whole_norm_make)
