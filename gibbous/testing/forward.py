"""The forward-mode check of a primitive: its jvp against central finite differences, and the
transpose identity ``<ybar, J v> = <J^T ybar, v>`` between its forward and reverse rules.

``check_forward(f, *args, kwargs=...)`` says what forward mode does with the call:

* ``"checked"``: the callable has a forward rule for these types; its tangent along random
  directions agrees with finite differences and, against the reverse rule's pullback of a
  random cotangent, with the transpose identity (which catches a forward and a reverse rule
  that disagree, whatever the finite differences' noise);
* ``"zero"``: a ``zero_derivative`` registration: the result has no tangent;
* ``"none"``: no operand can have a tangent (ints, bools);
* ``"reverse-only"``: no forward rule for these types, with the reason;
* ``"failed"``: a check failed, with the numbers.

The audit runs it on every case (``gibbous.audit``); docs/rules.md lists each registration's
forward status.
"""

from __future__ import annotations

import typing as t

import attrs
import numpy as np

from gibbous.api import build_rrule, value_and_pullback
from gibbous.forward import primitive_program, primitive_run
from gibbous.ir import types as T
from gibbous.ir.purity import is_pure, purity_entry
from gibbous.passes.jvp_activity import tangent_carrying
from gibbous.rules import forward as FR
from gibbous.rules.registry import Context, DefaultContext, lookup_rule

Status = t.Literal["checked", "zero", "none", "reverse-only", "failed"]


@attrs.frozen
class ForwardCheck:
    status: Status
    message: str = ""  # the reason (reverse-only) or the failure
    fd_error: float | None = None  # largest relative error against finite differences
    transpose_error: float | None = None  # relative error of the transpose identity

    def __str__(self) -> str:
        if self.status == "checked":
            return "checked"
        if self.status in ("reverse-only", "failed"):
            return f"{self.status}: {self.message}"
        return {"zero": "zero derivative", "none": "nothing differentiable"}[self.status]


def check_forward(
    f: t.Callable[..., t.Any],
    *args: t.Any,
    kwargs: t.Mapping[str, t.Any] | None = None,
    ctx: Context = DefaultContext,
    rng: np.random.Generator | int | None = 0,
    directions: int = 2,
) -> ForwardCheck:
    """What forward mode does with ``f(*args, **kwargs)``, checked (see the module's doc)."""
    kwargs = dict(kwargs or {})
    kwnames = tuple(kwargs)
    types = tuple(T.typeof(a) for a in (*args, *kwargs.values()))
    try:
        registration = lookup_rule(ctx, f, types, kwnames)
    except Exception:
        registration = None
    if registration is not None and registration.kind == "zero_derivative":
        return ForwardCheck("zero")
    positional_out = isinstance(f, np.ufunc) and len(args) > f.nin
    if "out" in kwnames or positional_out or (f in FR.IN_PLACE and isinstance(types[0], T.Array)):
        return ForwardCheck("reverse-only", _WRITES)
    if any(isinstance(ty, T.Complex) or _complex_array(ty) for ty in types):
        return ForwardCheck("reverse-only", "complex operands (forward rules take real ones)")
    # Copies: arguments that share memory (``x`` and ``x.T``) share one cotangent in reverse
    # mode, while the check gives each its own direction.
    args = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)
    varied = tuple(
        tangent_carrying(ty) and not isinstance(ty, T.Any) for ty in types[: len(args)]
    )
    varied += (False,) * len(kwnames)
    if not any(varied):
        return ForwardCheck("none")
    maker = FR.forward_maker(f)
    made = None if maker is None else maker(types, kwnames, varied)
    if made is None:
        # (not called here: a call with effects, ``x[i] = v`` or a random draw, would change
        # what the next case sees)
        known, _ = purity_entry(f)  # (unknown purity is not an effect)
        pure = is_pure(f, types[: len(args)], dict(zip(kwnames, types[len(args) :])))
        why = _EFFECTS if known and not pure else _why_not(kwnames, maker)
        return ForwardCheck("reverse-only", why)
    rng = np.random.default_rng(rng)
    y0 = f(*args, **kwargs)
    if isinstance(made, FR.Emit):
        run = primitive_program(f, types, kwnames, varied, made, T.typeof(y0))
    else:
        run = primitive_run(f, made, types, kwnames, varied)

    worst_fd, worst_t = 0.0, 0.0
    reverse = build_rrule(f, *args, ctx=ctx, **kwargs)
    for _ in range(directions):
        tangents = [_direction(rng, a) for a, v in zip(args, varied) if v]
        y, dy = run(*args, *kwargs.values(), *tangents)
        if not np.array_equal(np.asarray(y), np.asarray(y0), equal_nan=True):
            return ForwardCheck("failed", "the forward program's value is not the primal's")
        fd = _central(f, args, kwargs, varied, tangents)
        worst_fd = max(worst_fd, _relative(dy, fd))
        ybar = _direction(rng, y)
        _, grads = value_and_pullback(reverse, ybar, f, *args, **kwargs)
        products = [np.asarray(ybar) * np.asarray(dy)]
        moved = iter(tangents)
        products += [np.asarray(g) * next(moved) for g, v in zip(grads[1:], varied) if v]
        left = float(np.sum(products[0]))
        right = sum(float(np.sum(p)) for p in products[1:])
        # (relative to the sums of magnitudes: a small sum of large terms cancels)
        scale = max(float(np.sum(np.abs(p))) for p in products)
        worst_t = max(worst_t, abs(left - right) / max(scale, 1e-300))
    # (float32 operands or result: no useful central difference, a looser identity)
    low = any(_low_precision(ty) for ty in (*types, T.typeof(y0)))
    if worst_t > (1e-4 if low else 1e-10) or (worst_fd > 1e-3 and not low):
        return ForwardCheck(
            "failed",
            f"transpose identity off by {worst_t:.1e} (relative), finite differences by "
            f"{worst_fd:.1e}",
            worst_fd,
            worst_t,
        )
    return ForwardCheck("checked", "", worst_fd, worst_t)


_WRITES = "writes into an operand (forward mode does not follow writes yet)"
_EFFECTS = "writes into an operand or has effects (forward mode does not follow them yet)"


def _why_not(kwnames: tuple[str, ...], maker: t.Any) -> str:
    if maker is not None:
        return "its forward rule does not take these operands"
    return "no forward rule yet"


def _low_precision(ty: T.Type) -> bool:
    dtype = ty.dtype if isinstance(ty, (T.Array, T.Float)) else None
    return dtype is not None and np.dtype(dtype).itemsize < 8


def _complex_array(ty: T.Type) -> bool:
    return isinstance(ty, T.Array) and ty.dtype is not None and np.dtype(ty.dtype).kind == "c"


def _direction(rng: np.random.Generator, like: t.Any) -> t.Any:
    if isinstance(like, np.ndarray):
        return rng.standard_normal(like.shape)
    return float(rng.standard_normal())


def _central(
    f: t.Callable[..., t.Any],
    args: tuple[t.Any, ...],
    kwargs: dict[str, t.Any],
    varied: tuple[bool, ...],
    tangents: list[t.Any],
) -> t.Any:
    h = 1e-6

    def at(s: float) -> t.Any:
        moved = iter(tangents)
        shifted = [a + s * next(moved) if v else a for a, v in zip(args, varied)]
        return np.asarray(f(*shifted, **kwargs), dtype=float)

    return (at(h) - at(-h)) / (2 * h)


def _relative(got: t.Any, expected: t.Any) -> float:
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-6)
    return float(np.max(np.abs(got - expected), initial=0.0)) / scale
