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
from gibbous.backends.numpy.codegen import compile_function
from gibbous.forward import ProgramBuilder, primitive_program, primitive_run
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Function
from gibbous.ir.purity import is_pure, purity_entry
from gibbous.passes.jvp import ForwardModeError, jvp_transform
from gibbous.passes.jvp_activity import tangent_carrying
from gibbous.rules import forward as FR
from gibbous.rules import forward_writes as FW
from gibbous.rules.public_names import callable_name
from gibbous.rules.registry import Context, DefaultContext, lookup_rule
from gibbous.session import Session

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
    if isinstance(f, np.ufunc) and len(args) > f.nin:
        return ForwardCheck("reverse-only", "out passed by position (forward rules take out=)")
    if any(isinstance(ty, T.Complex) or _complex_array(ty) for ty in types):
        return ForwardCheck("reverse-only", "complex operands (forward rules take real ones)")
    # Copies: arguments that share memory (``x`` and ``x.T``) share one cotangent in reverse
    # mode, while the check gives each its own direction.
    args = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)
    written = FW.written_operands(f, types, kwnames)
    if written:
        return _check_write(f, args, kwargs, types, min(written), ctx, np.random.default_rng(rng))
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
    return _verdict(types, y0, worst_fd, worst_t)


def _verdict(types: tuple[T.Type, ...], y0: t.Any, worst_fd: float, worst_t: float) -> ForwardCheck:
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


_EFFECTS = "writes into an operand or has effects forward mode does not follow"


def _check_write(
    f: t.Callable[..., t.Any],
    args: tuple[t.Any, ...],
    kwargs: dict[str, t.Any],
    types: tuple[T.Type, ...],
    written: int,
    ctx: Context,
    rng: np.random.Generator,
) -> ForwardCheck:
    """A call that writes into operand ``written`` (``z[i] = x``, ``out=``, ``z += x``): its
    forward program is the transform's (``gibbous.passes.jvp``) of ``g(*operands) = (f(...);
    copy of the written operand)``, checked as a rule is, the value being what the write
    left in the operand."""
    n = len(args)
    kwnames = tuple(kwargs)
    params = [(f"x{i}", ty) for i, ty in enumerate(types)]
    ir = Function(f"{getattr(f, '__name__', 'f')}_writes", params)
    b = Builder(ir)
    values = ir.args
    b.call(f, *values[:n], kwargs=dict(zip(kwnames, values[n:])), type=T.ANY)
    b.ret(b.call(np.copy, values[written], type=types[written]))
    g = compile_function(ir)
    varied = tuple(tangent_carrying(ty) and not isinstance(ty, T.Any) for ty in types)
    if not varied[written]:
        return ForwardCheck("none")
    builder = ProgramBuilder(Session(ctx, False, None))
    try:
        forward_ir = jvp_transform(ir, varied, builder, callable_name(f))
    except ForwardModeError as e:
        return ForwardCheck("reverse-only", str(e).split(" (", 1)[0])
    run = compile_function(forward_ir)
    operands = (*args, *kwargs.values())

    def copies(given: t.Sequence[t.Any] = operands) -> list[t.Any]:
        # (arrays stay arrays: ``a + h * d`` of a 0-d array is a NumPy scalar, no ``out``)
        return [np.array(a) if isinstance(o, np.ndarray) else a for a, o in zip(given, operands)]

    y0 = g(*copies())
    reverse = build_rrule(g, *copies(), ctx=ctx)
    worst_fd, worst_t = 0.0, 0.0
    for _ in range(2):
        tangents = [_direction(rng, a) for a, v in zip(operands, varied) if v]
        y, dy = t.cast(tuple[t.Any, t.Any], run(*copies(), *[np.array(d) for d in tangents]))
        if not np.array_equal(np.asarray(y), np.asarray(y0), equal_nan=True):
            return ForwardCheck("failed", "the forward program's value is not the primal's")
        fd = _central(lambda *a: g(*copies(a)), operands, {}, varied, tangents)
        finer = _central(lambda *a: g(*copies(a)), operands, {}, varied, tangents, 1e-7)
        if _relative(finer, fd) < 1e-3:  # (else a jump at this point: ``x // x``; the
            worst_fd = max(worst_fd, _relative(dy, fd))  # transpose identity still holds)
        ybar = _direction(rng, y)
        _, grads = value_and_pullback(reverse, ybar, g, *copies())
        moved = iter(tangents)
        products = [np.asarray(ybar) * np.asarray(dy)]
        products += [np.asarray(gr) * next(moved) for gr, v in zip(grads[1:], varied) if v]
        left, right = float(np.sum(products[0])), sum(float(np.sum(p)) for p in products[1:])
        scale = max(float(np.sum(np.abs(p))) for p in products)
        worst_t = max(worst_t, abs(left - right) / max(scale, 1e-300))
    return _verdict(types, y0, worst_fd, worst_t)


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
    h: float = 1e-6,
) -> t.Any:
    def at(s: float) -> t.Any:
        moved = iter(tangents)
        shifted = [a + s * next(moved) if v else a for a, v in zip(args, varied)]
        return np.asarray(f(*shifted, **kwargs), dtype=float)

    return (at(h) - at(-h)) / (2 * h)


def _relative(got: t.Any, expected: t.Any) -> float:
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-6)
    return float(np.max(np.abs(got - expected), initial=0.0)) / scale
