"""SciPy: rules for ``scipy.signal``'s convolutions and linear filter: ``convolve``,
``correlate`` (``method`` "direct", "fft", "auto"), ``fftconvolve``, ``oaconvolve``
(``axes``), ``convolve2d``, ``correlate2d`` (``boundary`` "fill" with a differentiable
``fillvalue``, "wrap", "symm"), every ``mode``; ``lfilter`` (in ``x``, ``b`` and ``a``).

**Convolutions** are bilinear.  Each result is a window of a full convolution ``z[k] = sum_i
a[i] v[k - i]`` along the convolved axes (the others broadcast, for ``fftconvolve`` and
``oaconvolve`` with ``axes``); a correlation is the convolution with ``flip(conj(v))``.  SciPy
centres the windows ("same": ``in1``'s shape; "valid": ``|s1 - s2| + 1``), except
``correlate2d``'s "same", which starts at ``(full - out + 1) // 2``.  The 2-d functions pad
``in1`` by the kernel's size less one with their boundary first (``np.pad``'s constant, wrap,
symmetric: measured equal to SciPy's, kernels larger than the input included) and take the
valid convolution, for "full" and "same" ("valid" reads no boundary).  So the pullback puts
the cotangent into the full result's place (zeros elsewhere), and, for the pairing ``Re
sum(conj(g) d)`` (docs/tangents.md), ``a`` gets ``valid(G, flip(conj(v)))`` and ``v``
``valid(G, flip(conj(a)))`` (the correlations of ``G`` with the other operand), computed by the
call's own function in "valid" mode (so ``fftconvolve``'s adjoint is FFTs too); the padded
input's cotangent goes back through ``np.pad``'s adjoint (``Padding``), whose fill value's
part is ``fillvalue``'s.  Refused: ``correlate2d`` in "valid" mode with ``in2`` the larger,
which SciPy computes as ``correlate2d(in2, in1)`` reversed (swap the operands).

**lfilter** ``y = (B / A) x`` along ``axis`` (a causal filter: ``A(z) y = B(z) x``): the
adjoint of a causal filter is the filter run backwards in time, so ``x`` gets
``flip(lfilter(conj(b), conj(a), flip(g)))``; with ``q = flip(lfilter(1, conj(a), flip(g)))``
(``1 / A``'s adjoint), ``b[k]`` gets ``sum_n q[n] conj(x[n - k])`` and ``a[k]`` ``-sum_n q[n]
conj(y[n - k])`` (``dA y + A dy = dB x``).  Forward mode: ``lfilter(b, a, dx) + lfilter(db, a,
x) - lfilter(da, a, y)``.  With initial conditions ``zi``, a twin (``lfilter_with_state``) in
reverse mode; forward mode refuses ``zi``.

Forward mode for the convolutions: ``f(da, v) + f(a, dv)``, ``fillvalue`` 0 in the first
term (the fill value is no tangent); a varied ``fillvalue`` has no forward rule.  All are
written into the forward program, so a Hessian-vector product differentiates them again.
"""

from __future__ import annotations

import types
import typing as t

import numpy as np
import scipy.signal as ss

from gibbous.infer.implementations import register_twin
from gibbous.infer.typerules.numpy import DataArgs, sampled_numpy
from gibbous.infer.typerules.sampling import evaluate_on_samples
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.ir.purity import register_pure_array_function
from gibbous.library.common import (
    ANY,
    ARRAY,
    CD,
    NT,
    Array,
    RuleResult,
    bind,
    conj,
    cotangent,
    needs,
    new_fdata,
    send,
    zero_for,
)
from gibbous.library.items import send_to_value
from gibbous.library.transforms.pad import Padding
from gibbous.rules import frules
from gibbous.rules.emit import added
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

Fn = t.Callable[..., t.Any]

#: Each convolution: whether it correlates, its family, its parameters after the operands.
CONVOLUTIONS: dict[Fn, tuple[bool, str, tuple[str, ...]]] = {
    ss.convolve: (False, "nd", ("mode", "method")),
    ss.correlate: (True, "nd", ("mode", "method")),
    ss.fftconvolve: (False, "fft", ("mode", "axes")),
    ss.oaconvolve: (False, "oa", ("mode", "axes")),
    ss.convolve2d: (False, "2d", ("mode", "boundary", "fillvalue")),
    ss.correlate2d: (True, "2d", ("mode", "boundary", "fillvalue")),
}
_DEFAULTS = {"mode": "full", "method": "auto", "axes": None, "boundary": "fill", "fillvalue": 0}
_PAD_MODES = {"fill": "constant", "wrap": "wrap", "symm": "symmetric"}


def _valid(fn: Fn, options: dict[str, t.Any]) -> t.Callable[[Array, Array], Array]:
    """The call's own function in "valid" mode, with its method or axes."""
    family = CONVOLUTIONS[fn][1]
    if family == "nd":
        return lambda x, k: ss.convolve(x, k, "valid", method=options["method"])
    if family == "2d":
        return lambda x, k: ss.convolve2d(x, k, "valid")
    own = ss.fftconvolve if family == "fft" else ss.oaconvolve
    return lambda x, k: own(x, k, "valid", axes=options["axes"])


def _axes(fn: Fn, options: dict[str, t.Any], ndim: int) -> list[int]:
    axes = options.get("axes") if CONVOLUTIONS[fn][1] in ("fft", "oa") else None
    if axes is None:
        return list(range(ndim))
    return sorted(int(a) % ndim for a in np.atleast_1d(t.cast(t.Any, axes)))


def _flip_conj(x: Array, axes: list[int]) -> Array:
    return t.cast(Array, conj(np.flip(x, tuple(axes))))


def convolution_rrule(f: CD, a: CD, v: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """Any function of ``CONVOLUTIONS`` (module docstring)."""
    fn = f.primal
    correlates, family, names = CONVOLUTIONS[fn]
    options = bind(names, args, kwargs, _DEFAULTS, getattr(fn, "__name__", "convolve"))
    ap, vp = np.asarray(a.primal), np.asarray(v.primal)
    mode = options["mode"]
    padded = family == "2d" and mode != "valid"
    if family == "2d" and correlates and mode == "valid" and ap.shape != vp.shape:
        if all(m >= n for n, m in zip(ap.shape, vp.shape)):
            raise NotImplementedError(
                "scipy.signal.correlate2d in 'valid' mode with in2 the larger: no rule (SciPy "
                "computes correlate2d(in2, in1) reversed; swap the operands)"
            )
    z = fn(a.primal, v.primal, *(x.primal for x in args), **{k: x.primal for k, x in kwargs.items()})
    zf = new_fdata(z)
    axes = _axes(fn, options, ap.ndim)
    padding = None
    base = ap
    if padded:
        widths = [(m - 1, m - 1) for m in vp.shape]
        boundary = _PAD_MODES[t.cast(str, options["boundary"])]
        fills = {"constant_values": options["fillvalue"]} if boundary == "constant" else {}
        padding = Padding.of(ap, {"pad_width": widths, "mode": boundary, **fills})
        base = np.pad(ap, widths, t.cast(t.Any, boundary), **fills)
    # The full convolution of ``base`` and ``v``, and where the result sits in it.
    full = [p + q - 1 if ax in axes else max(p, q) for ax, (p, q) in enumerate(zip(base.shape, vp.shape))]
    zshape = np.shape(z)
    start = []
    for ax in range(len(full)):
        if ax not in axes:
            start.append(0)
            continue
        user_full = ap.shape[ax] + vp.shape[ax] - 1
        skew = 1 if family == "2d" and correlates and mode == "same" else 0
        start.append((vp.shape[ax] - 1 if padded else 0) + (user_full - zshape[ax] + skew) // 2)
    window = tuple(slice(s, s + n) for s, n in zip(start, zshape))
    valid = _valid(fn, options)
    named = dict(zip(names, args)) | kwargs
    fill = named.get("fillvalue") if padded else None
    operands = (*args, *kwargs.values())

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        rest = [zero_for(c) for c in operands]
        if g is None:
            return (NT, zero_for(a), zero_for(v), *rest)
        big = np.zeros(full, dtype=np.result_type(g, base, vp))
        big[window] = g
        kernel = vp if correlates else _flip_conj(vp, axes)  # (a correlation's kernel is flip(conj(v)))
        ga = valid(big, kernel) if needs(a) or fill is not None else None
        gv = None
        if needs(v):
            gw = valid(big, _flip_conj(base, axes))  # the kernel's (for a correlation, flip(conj(v))'s)
            gv = _flip_conj(gw, axes) if correlates else gw
        if padding is not None and ga is not None:
            ga, fills = padding.back(np.asarray(ga))
            if fill is not None:
                where = next(i for i, c in enumerate(operands) if c is fill)
                rest[where] = send_to_value(fill, np.sum(fills))
        return (NT, send(a, ga) if needs(a) else zero_for(a), send(v, gv), *rest)

    return CoDual(z, zf), pullback


def _convolution_tangent(fn: Fn) -> frules.Maker:
    """``f(da, v) + f(a, dv)``, the other operands passed on (``fillvalue`` 0 in the first)."""
    names = ("in1", "in2", *CONVOLUTIONS[fn][2])

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> frules.Emit | None:
        n = len(types) - len(kwnames)
        if n < 2 or n > len(names) or not set(kwnames) <= set(names[n:]):
            return None
        if any(varied[2:]) or not all(map(frules.number_operand, types[:2])):
            return None

        def emit(
            b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
        ) -> Value:
            (x, y), (dx, dy) = args[:2], tangents[:2]
            terms = []
            if dx is not None:
                unfilled = dict(kwargs)
                rest = list(args[2:])
                if "fillvalue" in names[:n]:
                    rest[names.index("fillvalue") - 2] = Constant(0.0)
                elif "fillvalue" in kwargs:
                    unfilled["fillvalue"] = Constant(0.0)
                terms.append(b.call(fn, dx, y, *rest, kwargs=unfilled, type=z.type))
            if dy is not None:
                terms.append(b.call(fn, x, dy, *args[2:], kwargs=kwargs, type=z.type))
            return added(b, z, terms)

        return frules.Emit(emit)

    return make


for _fn in CONVOLUTIONS:
    primitive(_fn, ARRAY, ARRAY, ...)(convolution_rrule)
    frules.register(_fn, _convolution_tangent(_fn), numeric=True)


# --------------------------------------------------------------------------------------------
# lfilter


def _backwards(b: Array, a: Array, g: Array, axis: int) -> Array:
    """The adjoint of ``lfilter(b, a, ., axis)``: the conjugate filter run backwards in time."""
    return np.flip(ss.lfilter(conj(b), conj(a), np.flip(g, axis), axis=axis), axis)


def _lags(q: Array, s: Array, count: int) -> Array:
    """``sum_n q[..., n] conj(s[..., n - k])`` for ``k < count`` (the axis last)."""
    n = q.shape[-1]
    return np.array([np.sum(q[..., k:] * conj(s[..., : n - k])) for k in range(min(count, n))]
                    + [0.0] * max(count - n, 0))  # fmt: skip


def lfilter_rrule(f: CD, b: CD, a: CD, x: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``y = lfilter(b, a, x, axis)`` (module docstring); ``zi=None`` at most."""
    options = bind(("axis", "zi"), args, kwargs, {"axis": -1, "zi": None}, "lfilter")
    y = f.primal(b.primal, a.primal, x.primal, *(c.primal for c in args), **{k: c.primal for k, c in kwargs.items()})
    yf = new_fdata(y)
    bp, ap = np.atleast_1d(np.asarray(b.primal)), np.atleast_1d(np.asarray(a.primal))
    xp = np.asarray(x.primal)
    axis = int(t.cast(int, options["axis"])) % xp.ndim
    rest = tuple(zero_for(c) for c in (*args, *kwargs.values()))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(yf, dy)
        if g is None:
            return (NT, send_to_value(b, None), send_to_value(a, None), zero_for(x), *rest)
        gx = _backwards(bp, ap, g, axis) if needs(x) else None
        q = np.moveaxis(_backwards(np.ones(1), ap, g, axis), axis, -1)
        gb = _lags(q, np.moveaxis(xp, axis, -1), bp.size).reshape(np.shape(b.primal))
        ga = -_lags(q, np.moveaxis(y, axis, -1), ap.size).reshape(np.shape(a.primal))
        return (NT, send_to_value(b, gb), send_to_value(a, ga), send(x, gx), *rest)

    return CoDual(y, yf), pullback


# The rule's calls: every call without initial conditions (``zi`` absent or None); those with
# ``zi`` are the twin's (``lfilter_with_state``), which calls the rule's.
_LFILTER_CALLS: list[tuple[tuple[T.Type | str, ...], dict[str, T.Type | str]]] = [
    ((), {}), ((ANY,), {}), ((ANY, "none"), {}), ((), {"axis": ANY}), ((), {"zi": "none"}),
    ((), {"axis": ANY, "zi": "none"}), ((ANY,), {"zi": "none"}),
]  # fmt: skip
for _more, _keywords in _LFILTER_CALLS:
    primitive(ss.lfilter, ANY, ANY, ARRAY, *_more, kwargs=_keywords)(lfilter_rrule)


def lfilter_with_state(b: t.Any, a: t.Any, x: t.Any, axis: int = -1, zi: t.Any = None) -> t.Any:
    """``lfilter(b, a, x, axis, zi)``, by the filter without initial conditions: with the
    coefficients normalised (``a[0] = 1``) and padded to ``K + 1``, the transposed direct
    form II started from state ``zi`` answers as from rest to ``x`` plus, to the state, the
    response of ``1 / A`` to ``zi`` as an input (``y[n] + sum a[j] y[n - j] = zi[n]`` for
    ``n < K``); the final state is ``zf[i] = zi[i + N] + sum_{m = 1}^{min(N, K - i)} (b[i + m]
    x[N - m] - a[i + m] y[N - m])`` (``zi[j] = 0`` for ``j >= K``)."""
    if zi is None:
        return ss.lfilter(b, a, x, axis=axis)
    b = np.atleast_1d(np.asarray(b))
    a = np.atleast_1d(np.asarray(a))
    k = max(a.shape[0], b.shape[0]) - 1
    b = np.concatenate([b / a[0], np.zeros(k + 1 - b.shape[0])])
    a = np.concatenate([a / a[0], np.zeros(k + 1 - a.shape[0])])
    x = np.moveaxis(np.asarray(x), axis, -1)
    n = x.shape[-1]
    zi = np.broadcast_to(np.moveaxis(np.asarray(zi), axis, -1), x.shape[:-1] + (k,))
    first = min(k, n)
    c = np.concatenate([zi[..., :first], np.zeros(x.shape[:-1] + (n - first,))], axis=-1)
    y = ss.lfilter(b, a, x, axis=-1) + ss.lfilter(np.ones(1), a, c, axis=-1)
    states = []
    for i in range(k):
        m = np.arange(1, min(n, k - i) + 1)
        state = np.sum(b[i + m] * x[..., n - m] - a[i + m] * y[..., n - m], axis=-1)
        states.append(state + zi[..., i + n] if i + n < k else state)
    zf = np.stack(states, axis=-1) if k else zi * 0.0
    return np.moveaxis(y, -1, axis), np.moveaxis(zf, -1, axis)


register_twin(ss.lfilter, t.cast(types.FunctionType, lfilter_with_state))


def _lfilter_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Emit | None:
    n = len(types) - len(kwnames)  # (b, a, x, axis; not zi)
    if not 3 <= n <= 4 or not set(kwnames) <= ({"axis"} if n == 3 else set()) or any(varied[3:]):
        return None
    if not all(map(frules.number_operand, types[:3])):
        return None

    def emit(
        bld: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        (b, a, x), (db, da, dx), rest = args[:3], tangents[:3], args[3:]
        terms = [
            bld.call(ss.lfilter, *three, *rest, kwargs=kwargs, type=z.type)
            for three, d in (((b, a, dx), dx), ((db, a, x), db))
            if d is not None
        ]
        if da is not None:
            back = bld.call(ss.lfilter, da, a, z, *rest, kwargs=kwargs, type=z.type)
            terms.append(bld.call(np.negative, back, type=z.type))
        return added(bld, z, terms)

    return frules.Emit(emit)


frules.register(ss.lfilter, _lfilter_tangent, numeric=True)


# --------------------------------------------------------------------------------------------
# Type rules and purity


def _as_array(ty: T.Type) -> T.Type:
    """The type of ``np.asarray`` of a value of type ``ty`` (a list of coefficients)."""
    found = evaluate_on_samples(np.asarray, (ty,), {})
    return ty if found is None or isinstance(ty, T.Array) else found


_sampled_lfilter = sampled_numpy(ss.lfilter, DataArgs(3))


def _lfilter_type(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    """Sampling, with the coefficients made arrays first (``lfilter([1.0], [1.0, -0.5], x)``:
    lists are not sampled)."""
    return _sampled_lfilter(tuple(_as_array(a) if i < 2 else a for i, a in enumerate(args)), kwargs)


def _register_types() -> None:
    for fn in CONVOLUTIONS:
        register_type_rule(fn)(sampled_numpy(fn, DataArgs(2)))
        register_pure_array_function(fn)
    register_type_rule(ss.lfilter)(_lfilter_type)
    register_pure_array_function(ss.lfilter)


_register_types()
