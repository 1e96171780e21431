"""``np.convolve(a, v, mode)`` and ``np.correlate(a, v, mode)``, modes "full", "same" and
"valid" (or NumPy's numbers for them, 2, 1, 0): bilinear in ``(a, v)``.

With ``N = len(a)``, ``M = len(v)``, the full results (``N + M - 1`` entries, index ``k``) are
``conv[k] = sum_i a[i] v[k - i]`` and ``corr[k] = sum_n a[n + k - (M - 1)] conj(v[n])``
(NumPy's definition, whichever operand is longer); "same" and "valid" are windows of them:
"valid" the ``|N - M| + 1`` entries from ``min(N, M) - 1``, "same" the ``max(N, M)`` entries
from ``(min(N, M) - 1) // 2``, except for ``correlate`` of a shorter ``a``, whose full result
NumPy computes reversed (from the swapped operands) and crops from ``min(N, M) // 2``.

The pullback pads the cotangent back into the full result's place (zeros outside the window)
and takes, for the pairing ``Re sum(conj(g) d)`` (docs/tangents.md):

* ``convolve`` is holomorphic in each operand: ``a`` gets ``sum_j g[i + j] conj(v[j])``,
  which is ``correlate(g, v, "valid")``, and ``v`` ``correlate(g, a, "valid")``;
* ``correlate`` is linear in ``a`` and conjugate-linear in ``v``: ``a`` gets ``sum_n g[i - n +
  M - 1] v[n]`` = ``convolve(g, v, "valid")``; ``v[n]`` gets ``sum_i a[i] conj(g[i - n + M -
  1])`` = ``conj(correlate(g, a, "valid"))[M - 1 - n]``.

Each costs what the primal costs (a correlation of the full-length cotangent with one
operand).  A real operand takes the real part.  Forward mode: ``f(da, v) + f(a, dv)`` with the
mode passed on (``register_bilinear``), a Hessian-vector product differentiating that again.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.library.common import (
    ARRAY,
    CD,
    NT,
    Array,
    RuleResult,
    bind,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.rules import frules
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

_MODES = {"valid": 0, "same": 1, "full": 2, 0: 0, 1: 1, 2: 2}


def window(fn: object, n: int, m: int, mode: object) -> tuple[int, int]:
    """Where the result of ``fn(a, v, mode)`` (``len(a) == n``, ``len(v) == m``) starts in the
    full result, and its length."""
    lo, hi = min(n, m), max(n, m)
    code = _MODES.get(t.cast(t.Any, mode)) if isinstance(mode, (str, int)) else None
    if code == 2:
        return 0, n + m - 1
    if code == 0:
        return lo - 1, hi - lo + 1
    if code == 1:
        return (lo // 2 if fn is np.correlate and n < m else (lo - 1) // 2), hi
    raise ValueError("Use one of 'valid', 'same', or 'full' for convolve/correlate mode")


def _full(g: Array, start: int, length: int) -> Array:
    """The cotangent of the full result: ``g`` at its window, zeros elsewhere."""
    if start == 0 and g.shape[0] == length:
        return g
    full = np.zeros(length, dtype=g.dtype)
    full[start : start + g.shape[0]] = g
    return full


def convolve_rrule(f: CD, a: CD, v: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.convolve`` and ``np.correlate`` of two vectors (module docstring)."""
    fn = f.primal
    name = getattr(fn, "__name__", "convolve")
    mode = bind(("mode",), args, kwargs, {"mode": "valid" if fn is np.correlate else "full"}, name)
    z = fn(a.primal, v.primal, *(x.primal for x in args), **{k: x.primal for k, x in kwargs.items()})
    ap, vp = np.atleast_1d(a.primal), np.atleast_1d(v.primal)  # (as NumPy reads a 0-d operand)
    n, m = len(ap), len(vp)
    start, _ = window(fn, n, m, mode["mode"])
    zf = new_fdata(z)
    rest = tuple(zero_for(x) for x in (*args, *kwargs.values()))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return (NT, zero_for(a), zero_for(v), *rest)
        full = _full(np.asarray(g), start, n + m - 1)
        ga = gv = None
        if fn is np.convolve:
            ga = np.correlate(full, vp, "valid") if needs(a) else None
            gv = np.correlate(full, ap, "valid") if needs(v) else None
        else:
            ga = np.convolve(full, vp, "valid") if needs(a) else None
            gv = np.conj(np.correlate(full, ap, "valid"))[::-1] if needs(v) else None
        return (NT, send(a, ga), send(v, gv), *rest)

    return CoDual(z, zf), pullback


for _fn in (np.convolve, np.correlate):
    primitive(_fn, ARRAY, ARRAY, ...)(convolve_rrule)
frules.register_bilinear([np.convolve, np.correlate], most=3, options=("mode",))
