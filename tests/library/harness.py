"""A small tape to test primitive rules, alone and in short programs, against finite
differences.

``Tape.call(fn, *vars, **kwvars)`` looks up the rule for the call by the operands' types (as the
AD pass does: ``typeof`` of inputs and results, ``Const`` for constants), runs it, and records
its pullback; every result is a new ``Var``, so a rule returning an operand's own CoDual (an
identity, ``l += ...``) still gets a value slot of its own.  ``backward`` seeds the output and
runs the pullbacks last-first, adding each returned rdata into the slot of its operand.

``check(program, *inputs)`` runs a program (a function of a tape and input vars returning one
var) forward with random non-zero fdata on the inputs, seeds the output and, after the forward
pass, every input's fdata with random cotangents, runs it backward, and checks:

* every pullback returned one rdata per operand;
* every input is as it was (values, and its fdata objects are the same objects);
* the gradient (fdata now minus fdata before, plus the rdata that reached the inputs) is that
  of ``L = <W_y, y> + sum_i <W_i, fdata part of input i after the program>`` by central
  differences (the program run on perturbed copies with a plain tape that just calls).
"""

from __future__ import annotations

import copy
import dataclasses
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.rules.registry import DefaultContext, build_primitive_rrule
from gibbous.tangents.model import (
    CoDual,
    MutableTangent,
    NoTangent,
    Tangent,
    fdata_of,
    increment,
    randn_tangent,
    rdata_of,
    tangent_from,
    zero_coduals,
    zero_fdata,
    zero_rdata,
)
from tests.rules import fd

NT = NoTangent()


class Var:
    """A value of a program: its CoDual and the slot where its rdata collects."""

    __slots__ = ("codual", "type", "rdata")

    def __init__(self, codual: CoDual[t.Any, t.Any], ty: T.Type) -> None:
        self.codual = codual
        self.type = ty
        self.rdata: t.Any = zero_rdata(codual.primal)

    @property
    def primal(self) -> t.Any:
        return self.codual.primal

    @property
    def fdata(self) -> t.Any:
        return self.codual.fdata


class Tape:
    def __init__(self) -> None:
        self.entries: list[tuple[Var, t.Any, list[Var], str]] = []

    def inputs(self, *values: t.Any) -> list[Var]:
        return [Var(c, T.typeof(c.primal)) for c in zero_coduals(*values)]

    def const(self, value: t.Any) -> Var:
        return Var(CoDual(value, zero_fdata(value)), T.typeof(value, const=True))

    def call(self, fn: t.Any, *args: t.Any, **kwargs: t.Any) -> Var:
        args = tuple(a if isinstance(a, Var) else self.const(a) for a in args)
        kwargs = {k: v if isinstance(v, Var) else self.const(v) for k, v in kwargs.items()}
        operands = [*args, *kwargs.values()]
        rule = build_primitive_rrule(
            DefaultContext, fn, [v.type for v in operands], tuple(kwargs), debug=True
        )
        y, pullback = rule(
            CoDual(fn, NT), *(a.codual for a in args), **{k: v.codual for k, v in kwargs.items()}
        )
        assert isinstance(y, CoDual)
        out = Var(y, T.typeof(y.primal))
        self.entries.append((out, pullback, operands, getattr(fn, "__name__", repr(fn))))
        return out

    def backward(self) -> None:
        for out, pullback, operands, name in reversed(self.entries):
            rdata = pullback(out.rdata)
            assert len(rdata) == 1 + len(operands), f"{name}: {len(rdata)} rdata"
            assert rdata[0] is NT, name
            for v, r in zip(operands, rdata[1:]):
                v.rdata = increment(v.rdata, r)


class PlainTape:
    """Runs a program without derivatives, for finite differences."""

    def inputs(self, *values: t.Any) -> list[t.Any]:
        return list(values)

    def const(self, value: t.Any) -> t.Any:
        return value

    def call(self, fn: t.Any, *args: t.Any, **kwargs: t.Any) -> t.Any:
        return fn(*args, **kwargs)


Program = t.Callable[..., t.Any]

# --------------------------------------------------------------------------------------------
# Tangent structures


def randomize(fdata: t.Any, rng: np.random.Generator, seen: set[int] | None = None) -> t.Any:
    """Fill fdata with random values in place (array entries, float items of lists, dicts and
    objects); returns it, or the new value for an immutable float."""
    seen = set() if seen is None else seen
    if isinstance(fdata, np.ndarray):
        if id(fdata) not in seen and fdata.size:
            seen.add(id(fdata))
            r = rng.standard_normal(fdata.shape)
            fdata += r if fdata.dtype.kind != "c" else r + 1j * rng.standard_normal(fdata.shape)
        return fdata
    if isinstance(fdata, (float, complex, np.floating, np.complexfloating)):
        return type(fdata)(fdata + rng.standard_normal())  # type: ignore[arg-type]
    if isinstance(fdata, tuple):
        return tuple(randomize(v, rng, seen) for v in fdata)
    if isinstance(fdata, list):
        if id(fdata) not in seen:
            seen.add(id(fdata))
            fdata[:] = [randomize(v, rng, seen) for v in fdata]
        return fdata
    if isinstance(fdata, dict):
        if id(fdata) not in seen:
            seen.add(id(fdata))
            for k in fdata:
                fdata[k] = randomize(fdata[k], rng, seen)
        return fdata
    if isinstance(fdata, (MutableTangent, Tangent)):
        for k in fdata.fields:
            fdata.fields[k] = randomize(fdata.fields[k], rng, seen)
        return fdata
    return fdata


def snapshot(fdata: t.Any) -> t.Any:
    return copy.deepcopy(fdata)


def diff(now: t.Any, before: t.Any) -> t.Any:
    """``now - before`` for fdata structures."""
    if isinstance(now, NoTangent):
        return now
    if isinstance(now, np.ndarray):
        return now - before
    if isinstance(now, tuple):
        return tuple(diff(a, b) for a, b in zip(now, before, strict=True))
    if isinstance(now, list):
        return [diff(a, b) for a, b in zip(now, before, strict=True)]
    if isinstance(now, dict):
        assert now.keys() == before.keys()
        return {k: diff(now[k], before[k]) for k in now}
    if isinstance(now, MutableTangent):
        return MutableTangent({k: diff(v, before.fields[k]) for k, v in now.fields.items()})
    if isinstance(now, Tangent):
        return Tangent({k: diff(v, before.fields[k]) for k, v in now.fields.items()})
    return now - before


def same(a: t.Any, b: t.Any) -> bool:
    """Deep equality with arrays compared by value (nan equal to nan) and dtype."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, (list, tuple)) and not isinstance(a, str):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return (
            type(b) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
        )
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        names = [f.name for f in dataclasses.fields(a)]
        return type(a) is type(b) and all(same(getattr(a, n), getattr(b, n)) for n in names)
    return bool(a == b) or (a != a and b != b)


# --------------------------------------------------------------------------------------------
# Checks


class Outcome(t.NamedTuple):
    output: t.Any  # the output's primal
    grads: list[t.Any]  # one full tangent per input
    rdata: list[t.Any]  # the rdata that reached each input


def run(
    program: Program,
    values: t.Sequence[t.Any],
    rng: np.random.Generator,
    *,
    restored: bool = True,
) -> tuple[Outcome, t.Any, list[t.Any]]:
    """Forward and backward with random start fdata and seeds; returns the outcome and the
    seeds (for the output, and for each input's fdata)."""
    values = list(values)
    before = copy.deepcopy(values)
    tape = Tape()
    xs = tape.inputs(*values)
    for x in xs:
        randomize(x.fdata, rng)
    start = [snapshot(x.fdata) for x in xs]
    fdata_objects = [x.fdata for x in xs]
    y = program(tape, *xs)
    w_y = randn_tangent(y.primal, rng)
    y.rdata = rdata_of(w_y)
    increment(y.fdata, fdata_of(w_y))
    w_x = []
    for x in xs:
        w = fdata_of(randn_tangent(x.primal, rng))
        increment(x.fdata, w)
        w_x.append(w)
    output = copy.deepcopy(y.primal)
    tape.backward()
    for x, obj in zip(xs, fdata_objects):
        assert x.fdata is obj
    if restored:
        for x, b in zip(xs, before):
            assert same(x.primal, b), f"not restored: {x.primal!r} != {b!r}"
    grads = [
        tangent_from(x.primal, diff(x.fdata, s), x.rdata) for x, s in zip(xs, start)
    ]
    return Outcome(output, grads, [x.rdata for x in xs]), w_y, w_x


def pair_once(w: t.Any, value: t.Any, seen: set[int] | None = None) -> float:
    """``<w, value>`` counting an array that occurs several times in ``value`` once: seeding
    its fdata through each occurrence adds once (``increment`` visits aliased fdata once)."""
    seen = set() if seen is None else seen
    if isinstance(w, NoTangent):
        return 0.0
    if isinstance(value, np.ndarray):
        if id(value) in seen:
            return 0.0
        seen.add(id(value))
        return fd.inner(w, value)
    if isinstance(value, (tuple, list)):
        return sum((pair_once(a, b, seen) for a, b in zip(w, value, strict=True)), 0.0)
    if isinstance(value, dict):
        return sum((pair_once(w[k], value[k], seen) for k in w), 0.0)
    return fd.inner(w, value)


def check(
    program: Program,
    *values: t.Any,
    rng: np.random.Generator,
    steps: t.Sequence[float] = (1e-3, 1e-5),
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> Outcome:
    """Run ``program`` and check its gradient against central differences (see module doc)."""
    outcome, w_y, w_x = run(program, values, rng)

    def loss(*vals: t.Any) -> float:
        vals_ = copy.deepcopy(list(vals))
        y = program(PlainTape(), *vals_)
        return pair_once(w_y, y) + sum(pair_once(w, v) for w, v in zip(w_x, vals_))

    fd.check_gradient(loss, list(values), outcome.grads, rng, steps=steps, rtol=rtol, atol=atol)
    return outcome


def call(fn: t.Any, *consts: t.Any, **kwconsts: t.Any) -> Program:
    """The program ``fn(*inputs, *consts, **kwconsts)``, constants passed as IR constants."""

    def program(tape: t.Any, *xs: t.Any) -> t.Any:
        return tape.call(fn, *xs, *(tape.const(c) for c in consts), **{
            k: tape.const(v) for k, v in kwconsts.items()
        })

    return program


def shape_of(x: t.Any) -> tuple[int, ...]:
    """The shape of a value in a program: a ``Var`` of the tape, or the plain value of the
    finite differences' run."""
    return np.shape(getattr(x, "primal", x))


def check_call(fn: t.Any, *values: t.Any, rng: np.random.Generator, **options: t.Any) -> Outcome:
    return check(call(fn), *values, rng=rng, **options)


def check_like_float64(
    program: Program, *values: t.Any, seed: int = 0, rtol: float = 2e-3
) -> None:
    """For float32 (or complex64) inputs: the gradient has the inputs' dtypes and agrees with
    the gradient of the same program on float64 copies, with the same seeds."""
    low, _, _ = run(program, values, np.random.default_rng(seed))
    wide_values = [_widen(v) for v in values]
    high, _, _ = run(program, wide_values, np.random.default_rng(seed))
    for v, g32, g64 in zip(values, low.grads, high.grads):
        _compare(v, g32, g64, rtol)


def _widen(v: t.Any) -> t.Any:
    if isinstance(v, np.ndarray) and v.dtype.kind in "fc":
        return v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
    if isinstance(v, np.float32):
        return np.float64(v)
    return v


def _compare(v: t.Any, g32: t.Any, g64: t.Any, rtol: float) -> None:
    if isinstance(v, np.ndarray) and v.dtype.kind in "fc":
        assert isinstance(g32, np.ndarray) and g32.dtype == v.dtype, (g32, v.dtype)
        np.testing.assert_allclose(g32, g64, rtol=rtol, atol=rtol)
    elif isinstance(v, np.float32):
        assert type(g32) is np.float32, type(g32)
        np.testing.assert_allclose(g32, g64, rtol=rtol, atol=rtol)


def gradient(program: Program, *values: t.Any, seed: t.Any = 1.0) -> list[t.Any]:
    """The gradient of the program's output paired with ``seed`` (zero start fdata): per input,
    its rdata, or its fdata if it has no rdata."""
    tape = Tape()
    xs = tape.inputs(*values)
    y = program(tape, *xs)
    if isinstance(y.fdata, np.ndarray):
        y.fdata[...] += seed
    elif zero_rdata(y.primal) is not NT:
        y.rdata = seed
    tape.backward()
    return [x.fdata if x.rdata is NT else x.rdata for x in xs]
