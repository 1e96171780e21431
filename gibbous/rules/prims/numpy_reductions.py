"""Reductions: ``sum``, ``mean``, ``prod``, ``max``/``min`` (``amax``/``amin``) and ``cumsum``,
as NumPy functions and as ndarray methods (``x.sum(axis=0)`` is ``numpy.ndarray.sum(x,
axis=0)`` after type inference).

``axis`` (an int, a tuple of ints or None) and ``keepdims`` may be passed by position or by
keyword, ``dtype`` too; ``out=``, ``initial=`` and ``where=`` are not supported (the rule
raises).  ``prod`` computes the product of the *other* elements with running products, so
zeros give exact gradients (no division).  ``max``/``min`` split the gradient evenly among
tied maxima (minima): a subgradient, symmetric in the ties, and the mean of the one-sided
derivatives for a tie of two (what a central difference measures).
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.rules.prims.common import (
    ARRAY,
    CD,
    NT,
    NUMBER,
    Array,
    RuleResult,
    add_into,
    bind,
    conj,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    zero_for,
)
from gibbous.rules.registry import primitive
from gibbous.rules.tangents import CoDual

SUM_PARAMETERS = ("axis", "dtype", "out", "keepdims", "initial", "where")
MEAN_PARAMETERS = ("axis", "dtype", "out", "keepdims", "where")
MAX_PARAMETERS = ("axis", "out", "keepdims", "initial", "where")
CUMSUM_PARAMETERS = ("axis", "dtype", "out")


def normalize_axes(axis: object, ndim: int) -> tuple[int, ...]:
    """The reduced axes, non-negative and sorted; all of them for None."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        a = int(t.cast(t.SupportsIndex, a))
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(out))


def _options(
    names: tuple[str, ...], args: t.Sequence[CD], kwargs: t.Mapping[str, CD], what: str
) -> tuple[object, bool]:
    bound = bind(names, args, kwargs, {}, what)
    if bound.get("out") is not None:
        raise NotImplementedError(f"{what} with out=: no rule; assign the result instead")
    for name in ("initial", "where"):
        if name in bound and not _is_default(name, bound[name]):
            raise NotImplementedError(f"{what} with {name}=: no rule")
    keepdims = bound.get("keepdims", False)
    return bound.get("axis"), isinstance(keepdims, (bool, np.bool_)) and bool(keepdims)


def _is_default(name: str, value: object) -> bool:
    if name == "where":
        return value is True or value is np.True_
    return type(value).__name__ == "_NoValueType"


def expand(g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    """The cotangent of a reduction with the reduced axes put back (as size 1)."""
    if keepdims or not axes:
        return g
    return np.expand_dims(g, axes)


def prod_of_others(x: Array, axes: tuple[int, ...]) -> Array:
    """For each element, the product of the other elements of its reduction: exact with zeros,
    from running products from the left and from the right."""
    if not axes or x.size == 0:
        return np.ones_like(x)
    k = len(axes)
    last = tuple(range(x.ndim - k, x.ndim))
    moved = np.moveaxis(x, axes, last)
    shape = moved.shape
    flat = moved.reshape(shape[: x.ndim - k] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return np.moveaxis((left * right).reshape(shape), last, axes)


def _sum_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims)


def _mean_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    count = 1
    for a in axes:
        count *= x.shape[a]
    return expand(g, axes, keepdims) / count


def _prod_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    return expand(g, axes, keepdims) * conj(prod_of_others(x, axes))


def _extreme_grad(x: Array, z: t.Any, g: t.Any, axes: tuple[int, ...], keepdims: bool) -> t.Any:
    chosen = x == expand(z, axes, keepdims)
    count = np.maximum(np.sum(chosen, axis=axes, keepdims=True), 1)
    return expand(g, axes, keepdims) * chosen / count


Grad = t.Callable[[Array, t.Any, t.Any, tuple[int, ...], bool], t.Any]


def reduction_rule(grad: Grad, names: tuple[str, ...]) -> t.Callable[..., RuleResult]:
    def rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
        xp = x.primal
        if not args and not kwargs:  # ``np.sum(x)``: over all axes, nothing to check
            z = f.primal(xp)
            dx = x.fdata
            real = type(dx) is np.ndarray and dx.dtype.kind == "f"
            if total and real and type(xp) is np.ndarray and xp.size:
                return CoDual(z, NT), _total_pullback(grad, xp, dx)
            axis: object = None
            keepdims = False
        else:
            what = getattr(f.primal, "__qualname__", "reduction")
            axis, keepdims = _options(names, args, kwargs, what)
            z = f.primal(
                xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()}
            )
        axes = normalize_axes(axis, xp.ndim)
        zf = new_fdata(z)
        rdata = nothing(2 + len(args) + len(kwargs))

        def pullback(dz: t.Any) -> tuple[t.Any, ...]:
            g = cotangent(zf, dz)
            if g is not None and needs(x):
                add_into(x.fdata, grad(xp, z, g, axes, keepdims))
            return rdata

        return CoDual(z, zf), pullback

    total = grad is _sum_grad or grad is _mean_grad
    rrule.__qualname__ = f"reduction_rule({grad.__name__})"
    return rrule


_NOTHING_2 = (NT, NT)


def _total_pullback(grad: Grad, x: Array, dx: Array) -> t.Callable[[t.Any], tuple[t.Any, ...]]:
    """The pullback of the sum or mean of all of a real, non-empty array's elements: the scalar
    cotangent (or its share) added to every element of x's fdata."""

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if type(dz) is float or type(dz) is np.float64:
            np.add(dx, dz if grad is _sum_grad else dz / x.size, out=dx)
        elif dz is not NT:
            add_into(dx, grad(x, None, dz, tuple(range(x.ndim)), False))
        return _NOTHING_2

    return pullback


REDUCTIONS: dict[t.Callable[..., t.Any], tuple[Grad, tuple[str, ...]]] = {
    np.sum: (_sum_grad, SUM_PARAMETERS),
    np.ndarray.sum: (_sum_grad, SUM_PARAMETERS),
    np.mean: (_mean_grad, MEAN_PARAMETERS),
    np.ndarray.mean: (_mean_grad, MEAN_PARAMETERS),
    np.prod: (_prod_grad, SUM_PARAMETERS),
    np.ndarray.prod: (_prod_grad, SUM_PARAMETERS),
    np.max: (_extreme_grad, MAX_PARAMETERS),
    np.amax: (_extreme_grad, MAX_PARAMETERS),
    np.ndarray.max: (_extreme_grad, MAX_PARAMETERS),
    np.min: (_extreme_grad, MAX_PARAMETERS),
    np.amin: (_extreme_grad, MAX_PARAMETERS),
    np.ndarray.min: (_extreme_grad, MAX_PARAMETERS),
}

for _fn, (_grad, _names) in REDUCTIONS.items():
    primitive(_fn, ARRAY, ...)(reduction_rule(_grad, _names))


def scalar_reduction_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.sum(2.5)`` and the like: a reduction of a scalar is the scalar (as a NumPy one)."""
    z = f.primal(x.primal, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        return (NT, zero_for(x) if dz is NT else send(x, dz), *rest)

    return CoDual(z, new_fdata(z)), pullback


for _fn in (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin):
    primitive(_fn, NUMBER, ...)(scalar_reduction_rrule)


def cumsum_rrule(f: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.cumsum(x, axis=None)``: the gradient is the reversed cumulative sum of the
    cotangent (over the flattened array for ``axis=None``)."""
    bound = bind(CUMSUM_PARAMETERS, args, kwargs, {}, "cumsum")
    if bound.get("out") is not None:
        raise NotImplementedError("cumsum with out=: no rule")
    axis = bound.get("axis")
    xp = x.primal
    z = f.primal(xp, *(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    zf = new_fdata(z)
    rdata = nothing(2 + len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is not None and needs(x):
            ax = -1 if axis is None else normalize_axes(axis, xp.ndim)[0]
            rev = np.flip(np.cumsum(np.flip(g, ax), axis=ax), ax)
            add_into(x.fdata, rev.reshape(xp.shape))
        return rdata

    return CoDual(z, zf), pullback


primitive(np.cumsum, ARRAY, ...)(cumsum_rrule)
primitive(np.ndarray.cumsum, ARRAY, ...)(cumsum_rrule)
