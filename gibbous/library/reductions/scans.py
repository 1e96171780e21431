"""Scans: ``cumsum`` (linear) and ``cumprod`` (exact with zeros: a recurrence along the axis),
as NumPy functions and ndarray methods, both modes; into ``out=``: ``reductions_out``."""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.library.common import (
    add_into,
    ARRAY,
    Array,
    bind,
    CD,
    conj,
    cotangent,
    needs,
    new_fdata,
    nothing,
    RuleResult,
)
from gibbous.ir import types as T
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual
from gibbous.rules import frules
from gibbous.library.reductions.reductions import (
    array_tangent,
    option_positions,
    CUMSUM_PARAMETERS,
    normalize_axes,
)

def scan_rule(name: str, gradient: t.Callable[..., Array]) -> t.Callable[..., RuleResult]:
    """``np.cumsum`` / ``np.cumprod(x, axis=None)`` (over the flattened array for ``axis=None``):
    ``gradient(x, z, g, axis)`` is the gradient for the cotangent ``g`` of the scan ``z``."""

    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        bound = bind(CUMSUM_PARAMETERS, args, kwargs, {}, name)
        if bound.get("out") is not None:
            raise NotImplementedError(f"{name} with out=: no rule")
        axis = bound.get("axis")
        xp = x.primal
        z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
        zf = new_fdata(z)
        rdata = nothing(2 + len(args) + len(kwargs))

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is not None and needs(x) and z.size:
                if axis is None:
                    grad = gradient(np.ravel(xp), z, g, 0)
                else:
                    grad = gradient(xp, z, g, normalize_axes(axis, xp.ndim)[0])
                add_into(x.fdata, grad.reshape(xp.shape))
            return rdata

        return CoDual(z, zf), pullback

    rrule.__qualname__ = f"scan_rule({name})"
    return rrule


def cumsum_grad(x: Array, z: Array, g: Array, axis: int) -> Array:
    """The reversed cumulative sum of the cotangent."""
    reversed_sums: Array = np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)
    return reversed_sums


cumsum_rrule = scan_rule("cumsum", cumsum_grad)
primitive(np.cumsum, ARRAY, ...)(cumsum_rrule)
primitive(np.ndarray.cumsum, ARRAY, ...)(cumsum_rrule)
frules.register_linear([np.cumsum, np.ndarray.cumsum], most=3)


def cumprod_grad(x: Array, z: Array, g: Array, axis: int) -> Array:
    """The gradient of ``cumprod`` along ``axis``: ``dx_j = sum_{i>=j} g_i conj(prod_{k<=i,
    k!=j} x_k)``.  Without zeros that is the reversed cumulative sum of ``g conj(z)`` over
    ``conj(x)``; with zeros, exact: ``conj(L_j) S_j`` with ``L`` the exclusive running product
    and ``S_j = g_j + conj(x_{j+1}) S_{j+1}`` (a loop over the axis)."""
    if np.all(x != 0):
        gz = g * conj(z)
        rev = np.flip(np.cumsum(np.flip(gz, axis), axis=axis), axis)
        return t.cast(Array, rev / conj(x))
    xm, gm = np.moveaxis(x, axis, 0), np.moveaxis(g, axis, 0)
    s = np.empty(gm.shape, np.result_type(gm, xm))
    s[-1] = gm[-1]
    for j in range(len(xm) - 2, -1, -1):
        s[j] = gm[j] + conj(xm[j + 1]) * s[j + 1]
    ones = np.ones((1,) + xm.shape[1:], xm.dtype)
    left = np.cumprod(np.concatenate([ones, xm[:-1]]), axis=0)
    return np.moveaxis(t.cast(Array, conj(left)) * s, 0, axis)


cumprod_rrule = scan_rule("cumprod", cumprod_grad)


primitive(np.cumprod, ARRAY, ...)(cumprod_rrule)
primitive(np.ndarray.cumprod, ARRAY, ...)(cumprod_rrule)


def cumprod_tangent_of(x: Array, z: Array, dx: Array, axis: int) -> Array:
    """The tangent of ``z = cumprod(x)`` along ``axis`` (``cumprod_grad`` transposed):
    without zeros ``z`` times the running sum of ``dx / x``; with zeros exact, by the
    recurrence ``dz_i = dz_(i-1) x_i + z_(i-1) dx_i``."""
    if x.size == 0:
        return np.zeros(z.shape, np.result_type(z, dx))
    if np.all(x != 0):
        return t.cast(Array, z * np.cumsum(dx / x, axis=axis))
    xm, zm = np.moveaxis(x, axis, 0), np.moveaxis(z, axis, 0)
    dm = np.moveaxis(np.broadcast_to(dx, x.shape), axis, 0)
    out = np.empty(xm.shape, np.result_type(zm, dm))
    out[0] = dm[0]
    for i in range(1, len(xm)):
        out[i] = out[i - 1] * xm[i] + zm[i - 1] * dm[i]
    return np.moveaxis(out, 0, axis)


def cumprod_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    where = option_positions(CUMSUM_PARAMETERS, types, kwnames)
    if where is None:
        return None
    n, total = len(types) - len(kwnames), len(types)

    def body(z: t.Any, x: Array, dx: Array, given: dict[str, t.Any]) -> t.Any:
        axis = given.get("axis")
        if axis is None:  # (over the flattened array)
            return cumprod_tangent_of(x.ravel(), z, dx.ravel(), 0)
        return cumprod_tangent_of(x, z, dx, normalize_axes(axis, x.ndim)[0])

    return array_tangent("numpy.cumprod", where, n, total, body)




_fn: t.Any
for _fn in (np.cumprod, np.ndarray.cumprod):
    frules.register(_fn, cumprod_tangent)
