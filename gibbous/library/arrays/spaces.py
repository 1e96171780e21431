"""``np.linspace(start, stop, num, endpoint, retstep, dtype, axis)``, both modes: of numbers or
arrays of endpoints (broadcast against each other, the samples along ``axis``), with the step
(``retstep=True``) too.

``y_i = start (1 - t_i) + stop t_i`` with ``t_i = i / div`` (``div = num - 1``, or ``num``
without the endpoint) and ``step = (stop - start) / div``: linear in the endpoints together,
so the tangent is ``np.linspace(dstart, dstop, ...)`` itself, written out where the types are
known (reverse mode differentiates it again, for Hessian-vector products), and the gradient
is ``g`` summed against ``1 - t`` and ``t`` along ``axis``.  (A hand rule: NumPy's own
``linspace`` is Python, but reads ``_nx.result_type``, ``operator.index`` and in-place
``out=`` writes into fresh arrays, each a rule of its own, at several times the primal's
cost; docs/decisions.md, "NumPy's statistics".)
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.library.common import CD, NT, ANY, Array, RuleResult, bind, cotangent, needs
from gibbous.library.common import new_fdata, part_cotangents, send, zero_for
from gibbous.rules import frules
from gibbous.rules.emit import is_none, real_type, refuse_complex, split_tangents
from gibbous.rules.emit import static_types
from gibbous.rules.registry import primitive
from gibbous.tangents.model import CoDual

LINSPACE_PARAMETERS = ("start", "stop", "num", "endpoint", "retstep", "dtype", "axis")
_DEFAULTS: dict[str, object] = {"num": 50, "endpoint": True, "retstep": False, "axis": 0}


def _division(options: t.Mapping[str, object]) -> int:
    num = int(t.cast(int, options["num"]))
    return num - 1 if options["endpoint"] else num


def linspace_fractions(options: t.Mapping[str, object]) -> Array:
    """``t_i`` of ``np.linspace``'s ``y_i = start (1 - t_i) + stop t_i``."""
    num, div = int(t.cast(int, options["num"])), _division(options)
    return np.arange(num) / div if div > 0 else np.zeros(num)


def _is_float(z: t.Any) -> bool:
    return isinstance(z, (float, np.floating)) or isinstance(z, np.ndarray) and z.dtype.kind == "f"


@primitive(np.linspace, ANY, ...)
def linspace_rrule(f: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """The endpoints get ``sum(g (1 - t))`` and ``sum(g t)`` along ``axis``, and the step's
    cotangent over ``div``, with opposite signs."""
    options = _DEFAULTS | bind(LINSPACE_PARAMETERS, args, kwargs, _DEFAULTS, "linspace")
    y = f.primal(*(a.primal for a in args), **{k: v.primal for k, v in kwargs.items()})
    retstep = bool(options["retstep"])
    yf = new_fdata(y)
    named = dict(zip(LINSPACE_PARAMETERS, args)) | kwargs
    samples = y[0] if retstep else y
    ends = np.broadcast_shapes(*(np.shape(t.cast(t.Any, options[k])) for k in ("start", "stop")))

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        g, g_step = part_cotangents(yf, dy, 2) if retstep else (cotangent(yf, dy), None)
        grads: dict[str, t.Any] = {}
        if g is not None and _is_float(samples):
            frac = linspace_fractions(options)
            axis = int(t.cast(int, options["axis"])) % (len(ends) + 1)
            along = np.moveaxis(np.asarray(g), axis, -1)
            grads = {"start": along @ (1 - frac), "stop": along @ frac}
        div = _division(options)
        if g_step is not None and div > 0:
            share = np.asarray(g_step) / div
            grads = {"start": grads.get("start", 0.0) - share, "stop": grads.get("stop", 0.0) + share}
        return (
            NT,
            *(
                send(c, grads[name]) if name in grads and needs(c) else zero_for(c)
                for name, c in named.items()
            ),
        )

    return CoDual(y, yf), pullback


def linspace_tangent(
    types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> frules.Tangent | frules.Emit | None:
    """``np.linspace(dstart, dstop, ...)`` with the call's other options (0.0 for an endpoint
    without a tangent); the step's tangent too with ``retstep=True``."""
    n = len(types) - len(kwnames)
    names = [*LINSPACE_PARAMETERS[:n], *kwnames]
    if n > len(LINSPACE_PARAMETERS) or len(set(names)) != len(names):
        return None
    if not set(names) <= set(LINSPACE_PARAMETERS) or not {"start", "stop"} <= set(names):
        return None
    where = {name: i for i, name in enumerate(names)}
    ends = (where["start"], where["stop"])
    real = all(real_type(types[i]) for i in ends)
    plain_dtype = "dtype" not in where or is_none(types[where["dtype"]])
    if real and plain_dtype and static_types(types):
        return frules.Emit(_linspace_emit(ends))

    def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
        ops, ds = split_tangents(a, n, len(types))
        values = [*ops, *kwargs.values()]
        options = dict(_DEFAULTS)  # (not ``|``: an hvp derives this function, dicts by items)
        for k, i in where.items():
            options[k] = values[i]
        refuse_complex("numpy.linspace", *[values[i] for i in ends], z)
        retstep = bool(options["retstep"])
        if not _is_float(z[0] if retstep else z):
            return frules.like(z, None)
        d0, d1 = [0.0 if ds[i] is None else ds[i] for i in ends]  # (a list: hvp derives it)
        rest = {k: v for k, v in options.items() if k not in ("start", "stop", "dtype")}
        dy, dstep = t.cast(t.Any, np.linspace)(d0, d1, **{**rest, "retstep": True})
        if not retstep:
            return frules.like(z, dy)
        return (frules.like(z[0], dy), frules.like(z[1], dstep))

    return tangent


def _linspace_emit(ends: tuple[int, int]) -> t.Callable[..., Value]:
    def emit(
        b: Builder, z: Value, args: frules.Values, tangents: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        if all(tangents[i] is None for i in ends):
            return frules.zero(b, z)
        operands = [*args, *kwargs.values()]
        for i in ends:
            d = tangents[i]
            operands[i] = Constant(0.0) if d is None else d
        n = len(args)
        return b.call(np.linspace, *operands[:n], kwargs=dict(zip(kwargs, operands[n:])), type=z.type)

    return emit


frules.register(np.linspace, linspace_tangent)
