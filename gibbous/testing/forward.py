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

import copy
from collections import abc
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.api import build_rrule, value_and_pullback
from gibbous.backends.numpy.codegen import compile_function
from gibbous.forward.primitive import primitive_program, primitive_run
from gibbous.forward.programs import ProgramBuilder
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Function
from gibbous.ir.purity import is_pure, purity_entry
from gibbous.forward.transform import ForwardModeError, jvp_transform
from gibbous.forward.activity import tangent_carrying
from gibbous.rules import frules
from gibbous.rules import inplace_forward
from gibbous.rules.public_names import callable_name
from gibbous.rules.registry import Context, DefaultContext, has_no_derivative, lookup_rule
from gibbous.tangents.model import NoTangent
from gibbous.session import Session
from gibbous.testing.allocations import measure

Status = t.Literal["checked", "zero", "none", "reverse-only", "failed", "structural"]


@attrs.frozen
class ForwardCheck:
    status: Status
    message: str = ""  # the reason (reverse-only) or the failure
    fd_error: float | None = None  # largest relative error against finite differences
    transpose_error: float | None = None  # relative error of the transpose identity
    #: a write: the NumPy memory a warm forward program allocates where the primal allocates
    #: none (0: nothing, as it must; None: not measured, not a write)
    allocates: int | None = None

    def __str__(self) -> str:
        if self.status == "checked":
            return "checked"
        if self.status in ("reverse-only", "failed", "structural"):
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
    if has_no_derivative(registration):
        return ForwardCheck("zero")
    complex_items = any(map(_holds_complex, (*args, *kwargs.values())))
    complex_ = complex_items or any(isinstance(ty, T.Complex) or _complex_array(ty) for ty in types)
    # Copies: arguments that share memory (``x`` and ``x.T``) share one cotangent in reverse
    # mode, while the check gives each its own direction.
    args = tuple(map(_apart, args))
    written = inplace_forward.written_operands(f, types, kwnames)
    if written:
        return _check_write(f, args, kwargs, types, min(written), ctx, np.random.default_rng(rng))
    varied = tuple(
        tangent_carrying(ty) and not isinstance(ty, (T.Any, T.Object)) for ty in types[: len(args)]
    )
    varied += (False,) * len(kwnames)
    if not any(varied):
        return ForwardCheck("none")
    maker = frules.forward_maker(f)
    made = None if maker is None else maker(types, kwnames, varied)
    if made is None:
        # (not called here: a call with effects, ``x[i] = v`` or a random draw, would change
        # what the next case sees)
        known, _ = purity_entry(f)  # (unknown purity is not an effect)
        pure = is_pure(f, types[: len(args)], dict(zip(kwnames, types[len(args) :])))
        why = _EFFECTS if known and not pure else _COMPLEX if complex_ else _why_not(kwnames, maker)
        return ForwardCheck("reverse-only", why)
    rng = np.random.default_rng(rng)
    y0 = f(*args, **kwargs)
    if isinstance(y0, _STRUCTURES):  # (no numbers to compare)
        return ForwardCheck("structural", _STRUCTURAL)
    if isinstance(made, frules.Emit):
        run = primitive_program(f, types, kwnames, varied, made, T.typeof(y0))
    else:
        run = primitive_run(f, made, types, kwnames, varied)

    reverse = build_rrule(f, *args, ctx=ctx, **kwargs)

    def primal(*a: t.Any) -> t.Any:
        return f(*a, **kwargs)

    def forward(*a: t.Any) -> t.Any:
        n = len(args)
        return run(*a[:n], *kwargs.values(), *[d for d in a[n:] if d is not None])

    def pullback(ybar: t.Any) -> t.Any:
        return value_and_pullback(reverse, ybar, f, *args, **kwargs)[1][1:]

    try:
        measured = _measure(primal, forward, pullback, args, varied, y0, rng, directions)
    except ForwardModeError as e:  # (the rule refuses these values: a real matrix's complex
        return ForwardCheck("reverse-only", str(e))  # eigenvalues, known only at run time)
    if isinstance(measured, ForwardCheck):
        return measured
    worst_fd, worst_t = measured
    return _verdict(types, y0, worst_fd, worst_t)


def _verdict(types: tuple[T.Type, ...], y0: t.Any, worst_fd: float, worst_t: float) -> ForwardCheck:
    # (float32 operands or result: no useful central difference, a looser identity)
    low = any(_low_precision(ty) for ty in (*types, T.typeof(y0))) or _holds_single(y0)
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
_STRUCTURAL = (
    "a cell, a function or a dict's view, whose tangent holds its contents' "
    "(gibbous.library.python.closures, containers), checked through the programs of "
    "tests/forward/test_closures_jvp.py and test_dicts_jvp.py"
)
_COMPLEX = "complex operands: its forward rule takes real ones"
_STRUCTURES = (pytypes.CellType, pytypes.FunctionType, abc.ItemsView, abc.ValuesView)


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
    forward program is the transform's (``gibbous.forward.transform``) of ``g(*operands) = (f(...);
    copy of the written operand)``, checked as a rule is, the value being what the write
    left in the operand."""
    n = len(args)
    kwnames = tuple(kwargs)
    params = [(f"x{i}", ty) for i, ty in enumerate(types)]
    ir = Function(f"{getattr(f, '__name__', 'f')}_writes", params)
    b = Builder(ir)
    values = ir.args
    b.call(f, *values[:n], kwargs=dict(zip(kwnames, values[n:])), type=T.ANY)
    copier = list if isinstance(types[written], T.List) else np.copy  # (a list: its items)
    b.ret(b.call(copier, values[written], type=types[written]))
    g = compile_function(ir)
    varied = tuple(tangent_carrying(ty) and not isinstance(ty, (T.Any, T.Object)) for ty in types)
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
        # (arrays stay arrays: ``a + h * d`` of a 0-d array is a NumPy scalar, no ``out``; a
        # list is written into too: each call gets its own)
        return [
            np.array(a) if isinstance(o, np.ndarray) else copy.deepcopy(a) if isinstance(a, list)
            else a
            for a, o in zip(given, operands)
        ]  # fmt: skip

    y0 = g(*copies())
    reverse = build_rrule(g, *copies(), ctx=ctx)

    def forward(*a: t.Any) -> t.Any:
        n = len(operands)
        return run(*copies(a[:n]), *[copy.deepcopy(d) for d in a[n:] if d is not None])

    def pullback(ybar: t.Any) -> t.Any:
        return value_and_pullback(reverse, ybar, g, *copies())[1][1:]

    measured = _measure(
        lambda *a: g(*copies(a)), forward, pullback, operands, varied, y0, rng, 2, jumps=True
    )
    if isinstance(measured, ForwardCheck):
        return measured
    worst_fd, worst_t = measured
    verdict = _verdict(types, y0, worst_fd, worst_t)
    if verdict.status != "checked":
        return verdict
    if not isinstance(operands[written], np.ndarray):  # (a list: Python objects, no arrays)
        return attrs.evolve(verdict, allocates=0)
    allocates = _allocates(f, ir, varied, builder, operands)
    if allocates:  # (the primal allocates nothing: its forward rule must not either)
        return ForwardCheck(
            "failed",
            f"the forward rule allocates {allocates} bytes warm where the primal allocates none",
            worst_fd,
            worst_t,
            allocates,
        )
    return attrs.evolve(verdict, allocates=0)


def _allocates(
    f: t.Callable[..., t.Any],
    ir: Function,
    varied: tuple[bool, ...],
    builder: ProgramBuilder,
    operands: tuple[t.Any, ...],
) -> int:
    """The NumPy memory the forward program of the write alone allocates warm, where the
    primal allocates none (0 where it allocates some)."""
    body = Function(f"{ir.name}_alone", [(a.name, a.type) for a in ir.args])
    b = Builder(body)
    call = next(iter(ir.calls()))
    n = len(call.args)
    b.call(f, *body.args[:n], kwargs=dict(zip(call.kwnames, body.args[n:])), type=T.ANY)
    b.ret(Constant(None))
    primal = compile_function(body)
    run = compile_function(jvp_transform(body, varied, builder, callable_name(f)))
    values = [np.array(a) if isinstance(a, np.ndarray) else a for a in operands]
    tangents = [
        np.zeros(np.shape(a), complex if _holds_complex(a) else float)
        for a, v in zip(operands, varied)
        if v
    ]
    if measure(lambda mark: primal(*values)).allocated:
        return 0
    return measure(lambda mark: run(*values, *tangents)).allocated


def _why_not(kwnames: tuple[str, ...], maker: t.Any) -> str:
    if maker is not None:
        return "its forward rule does not take these operands"
    return "no forward rule yet"


def _low_precision(ty: T.Type) -> bool:
    dtype = ty.dtype if isinstance(ty, (T.Array, T.Float)) else None
    if dtype is None:
        return False
    single = 8 if np.dtype(dtype).kind == "c" else 4  # (complex64, float32 and below)
    return np.dtype(dtype).itemsize <= single


def _holds_single(v: t.Any) -> bool:
    """A single-precision number or array, or a container holding one (a list's items, whose
    type the build could not tell: ``unpack`` of ``[1.5, np.float32(2.5)]``)."""
    if isinstance(v, (tuple, list)):
        return any(map(_holds_single, v))
    if isinstance(v, dict):
        return any(map(_holds_single, v.values()))
    return isinstance(v, (np.ndarray, np.generic)) and v.dtype in (np.float32, np.complex64)


def _complex_array(ty: T.Type) -> bool:
    return isinstance(ty, T.Array) and ty.dtype is not None and np.dtype(ty.dtype).kind == "c"


def _measure(
    primal: t.Callable[..., t.Any],
    forward: t.Callable[..., t.Any],
    pullback: t.Callable[[t.Any], t.Any],
    args: t.Sequence[t.Any],
    varied: tuple[bool, ...],
    y0: t.Any,
    rng: np.random.Generator,
    directions: int,
    jumps: bool = False,
) -> tuple[float, float] | ForwardCheck:
    """The worst relative errors of the tangent against central differences and of the
    transpose identity, along ``directions`` random tangents; ``forward(*args, *tangents)``
    (a tangent per argument, None where it has none) gives ``(y, dy)``, ``pullback(ybar)``
    the reverse rule's gradients of the arguments.  With ``jumps``, a point where the
    differences at two steps disagree (a jump: ``x // x``) is held to the identity alone."""
    worst_fd, worst_t = 0.0, 0.0
    for _ in range(directions):
        tangents = [_direction(rng, a) if v else None for a, v in zip(args, varied)]
        y, dy = forward(*args, *tangents)
        if not _same(y, y0):
            return ForwardCheck("failed", "the forward program's value is not the primal's")
        fd = _central(primal, args, tangents)
        if not jumps or _relative(_central(primal, args, tangents, 1e-7), fd) < 1e-3:
            worst_fd = max(worst_fd, _relative(dy, fd))
        ybar = _direction(rng, y, NoTangent())
        # (relative to the sums of magnitudes: a small sum of large terms cancels)
        left, scale = _inner(ybar, dy)
        right = 0.0
        for g, d in zip(pullback(ybar), tangents):
            if d is not None:
                term, size = _inner(g, d)
                right, scale = right + term, max(scale, size)
        worst_t = max(worst_t, abs(left - right) / max(scale, 1e-300))
    return worst_fd, worst_t


def _holds_complex(a: t.Any) -> bool:
    """A complex number or array, or a tuple, list or dict holding one."""
    if isinstance(a, (tuple, list)):
        return any(map(_holds_complex, a))
    if isinstance(a, dict):
        return any(map(_holds_complex, a.values()))
    if isinstance(a, np.ndarray):
        return bool(a.dtype.kind == "c")
    return isinstance(a, (complex, np.complexfloating))


def _apart(a: t.Any) -> t.Any:
    """``a`` with every array in it copied (in a tuple or list too: ``(x, x)`` is two)."""
    if isinstance(a, np.ndarray):
        return np.array(a)
    if isinstance(a, (tuple, list)):
        return _rebuild(a, [_apart(i) for i in a])
    if isinstance(a, dict):
        return {k: _apart(v) for k, v in a.items()}
    return a


def _rebuild(like: t.Any, items: t.Iterable[t.Any]) -> t.Any:
    """A tuple or list like ``like`` (a NamedTuple's class too) of ``items``."""
    if isinstance(like, list):
        return list(items)
    if hasattr(like, "_fields"):
        return type(like)(*items)
    return tuple(items)


def _carries(v: t.Any) -> bool:
    if isinstance(v, (tuple, list)):
        return any(map(_carries, v))
    if isinstance(v, dict):
        return any(map(_carries, v.values()))
    if isinstance(v, np.ndarray):
        return bool(v.dtype.kind in "fc")
    return isinstance(v, (float, complex, np.inexact))


def _direction(rng: np.random.Generator, like: t.Any, none: t.Any = None) -> t.Any:
    """A random tangent of ``like``'s structure (``none`` for what has none: an int)."""
    if isinstance(like, dict):  # (a dict's: its values', by key)
        values = list(like.values())
        return dict(zip(like, _direction(rng, values, none)))
    if isinstance(like, (tuple, list)):  # (an int item's tangent is 0.0, its cotangent none)
        items = [
            _direction(rng, i, none) if _carries(i)
            else 0.0 if none is None and isinstance(i, (int, np.integer)) else none
            for i in like
        ]  # fmt: skip
        if none is not None and isinstance(like, tuple):
            return tuple(items)  # (a NamedTuple's cotangent is the plain tuple's)
        return _rebuild(like, items)
    if like is None or isinstance(like, str):
        return none  # (no numbers: no tangent, no cotangent)
    if none is not None and _tangentless(like):
        return none  # (a boolean or integer result has no cotangent: a comparison's)
    if isinstance(like, np.ndarray) and like.dtype.kind == "c":
        return rng.standard_normal(like.shape) + 1j * rng.standard_normal(like.shape)
    if isinstance(like, np.ndarray):
        return rng.standard_normal(like.shape)
    if isinstance(like, (complex, np.complexfloating)):
        return complex(rng.standard_normal(), rng.standard_normal())
    return float(rng.standard_normal())


def _tangentless(v: t.Any) -> bool:
    if isinstance(v, np.ndarray):
        return bool(v.dtype.kind in "biu")
    return isinstance(v, (bool, int, np.bool_, np.integer))


def _shift(a: t.Any, s: float, d: t.Any) -> t.Any:
    if d is None:
        return a
    if isinstance(a, (tuple, list)):
        return _rebuild(a, [_shift(i, s, di) for i, di in zip(a, d)])
    if isinstance(a, dict):
        return {k: _shift(v, s, d.get(k)) for k, v in a.items()}
    return a + s * d


def _flat(v: t.Any) -> np.ndarray:
    """The numbers of a value, tangent or cotangent, in one flat array (an int item's, a bool
    one's too: its difference and its tangent are 0; None, NoTangent, a string: no
    numbers)."""
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (tuple, list)):
        leaves = [_flat(i) for i in v]
        return np.concatenate(leaves) if leaves else np.zeros(0)
    if isinstance(v, (int, float, complex, np.number, np.ndarray)):
        if np.iscomplexobj(v):  # (the real inner product: real and imaginary parts)
            a = np.asarray(v).ravel()
            return np.concatenate([a.real, a.imag])
        return np.asarray(v, dtype=float).ravel()
    return np.zeros(0)


def _inner(a: t.Any, b: t.Any) -> tuple[float, float]:
    """``<a, b>`` over the leaves both have, and the sum of the magnitudes of its terms."""
    if isinstance(a, dict) and isinstance(b, dict):  # (by key)
        a, b = [a[k] for k in a if k in b], [b[k] for k in a if k in b]
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        total, size = 0.0, 0.0
        for x, y in zip(a, b):
            term, s = _inner(x, y)
            total, size = total + term, size + s
        return total, size
    la, lb = _flat(a), _flat(b)
    if la.size == 0 or lb.size == 0:
        return 0.0, 0.0
    products = la * lb
    return float(np.sum(products)), float(np.sum(np.abs(products)))


def _same(y: t.Any, y0: t.Any) -> bool:
    if isinstance(y0, dict):
        if not isinstance(y, dict) or list(y) != list(y0):
            return False
        return all(map(_same, y.values(), y0.values()))
    if isinstance(y0, (tuple, list)):
        return type(y) is type(y0) and len(y) == len(y0) and all(map(_same, y, y0))
    try:
        return bool(np.array_equal(np.asarray(y), np.asarray(y0), equal_nan=True))
    except (TypeError, ValueError):  # (not numbers)
        return y is y0


def _central(
    f: t.Callable[..., t.Any],
    args: t.Sequence[t.Any],
    tangents: t.Sequence[t.Any],
    h: float = 1e-6,
) -> np.ndarray:
    plus = f(*[_shift(a, h, d) for a, d in zip(args, tangents)])
    minus = f(*[_shift(a, -h, d) for a, d in zip(args, tangents)])
    return t.cast(np.ndarray, (_flat(plus) - _flat(minus)) / (2 * h))


def _relative(got: t.Any, expected: t.Any) -> float:
    got, expected = _flat(got), _flat(expected)
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-6)
    return float(np.max(np.abs(got - expected), initial=0.0)) / scale
