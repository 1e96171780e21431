"""Forward rules of calls that write into arrays: the tangent is written where the primal is.

Forward mode keeps one tangent memory beside each array that a write may reach
(``gibbous.passes.jvp_activity``: the array is *exposed*), aliased as the primal is: ``v =
z[1:]`` has the tangent ``dz[1:]``, a view too.  A call that writes into ``z`` then writes its
tangent into ``dz``, and every view of ``dz`` sees it, as every view of ``z`` sees the primal
write.  The forms:

* ``z[i] = x``: ``dz[i] = dx`` (0 where ``x`` has no tangent); ``np.copyto(z, x)`` and
  ``z.fill(x)`` likewise;
* ``z += x``, ``z -= x``: ``dz += dx``, ``dz -= dx``, linear;
* the other in-place operators, and ``out=`` of a function with a forward rule, reduce to the
  function without the write (``plain``): its result ``t`` and tangent ``dt`` are computed from
  the operands *before* the write (an operand may be ``z`` itself: ``z *= z``), then the
  primal writes and ``np.copyto(dz, dt)`` follows;
* ``np.matmul(A, B, out=C)`` (and ``np.dot``) is **stateful**: ``dC = dA @ B + A @ dB`` is
  written into ``dC`` with the second product in a buffer the call site keeps, so a warm call
  allocates nothing (``MatmulOut``);
* a function of your own registered with ``frule(fn, writes=...)`` (``gibbous.frule``).

Anything else that writes into an array with a tangent is refused by the transform.
"""

from __future__ import annotations

import operator
import threading
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.forward_ir import ForwardModeError

#: ``emit(b, args, kwargs, tangents) -> (z, dz)``: writes the primal call *and* its tangent
#: (``tangents``: one per operand, positional then keyword, None where it has none); ``dz`` is
#: the result's tangent or None.
WriteEmit = t.Callable[
    [Builder, list[Value], dict[str, Value], list["Value | None"]], "tuple[Value, Value | None]"
]

IN_PLACE_OF = {
    getattr(operator, f"i{n}"): getattr(operator, n)
    for n in "add sub mul truediv floordiv mod pow matmul and_ or_ xor lshift rshift".split()
    if hasattr(operator, f"i{n}")
}
IN_PLACE_OF[operator.iand] = operator.and_
IN_PLACE_OF[operator.ior] = operator.or_

_LINEAR_IN_PLACE = {operator.iadd, operator.isub}

#: user registrations: fn -> (written positions / keyword names, stateful tangent function)
_USER: dict[object, tuple[tuple[int | str, ...], t.Callable[..., t.Any]]] = {}


def _array(ty: T.Type) -> bool:
    return isinstance(ty, T.Array)


def written_operands(
    fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]
) -> frozenset[int]:
    """The operands (by index: positional, then keyword) a call of ``fn`` with operands of
    these types writes into, among the forms this module knows; empty for any other call."""
    n = len(types) - len(kwnames)
    try:
        user = _USER.get(fn)
    except TypeError:  # (unhashable)
        return frozenset()
    if user is not None:
        out = set()
        for w in user[0]:
            if isinstance(w, int) and w < n:
                out.add(w)
            elif isinstance(w, str) and w in kwnames:
                out.add(n + kwnames.index(w))
        return frozenset(out)
    if "out" in kwnames:
        i = n + kwnames.index("out")
        return frozenset({i}) if _array(types[i]) else frozenset()
    if n and _array(types[0]):
        if fn is operator.setitem or fn in IN_PLACE_OF:
            return frozenset({0})
        if fn is np.copyto or fn is np.ndarray.fill:
            return frozenset({0})
    return frozenset()


def direct(
    fn: object,
    types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    varied: tuple[bool, ...],
    tangent_only: bool,
) -> WriteEmit | None:
    """The rule of a write that needs no other rule: item assignment, ``copyto``, ``fill``,
    ``+=`` / ``-=``, a stateful ``matmul(out=)``, a user's registration."""
    n = len(types) - len(kwnames)
    user = _USER.get(fn)
    if user is not None:
        return None if any(varied[n:]) else _user_emit(fn, user[1], n)
    if fn is operator.setitem and n == 3 and not kwnames:
        return _assign(operator.setitem, value=2)
    if fn is np.copyto and n >= 2 and set(kwnames) <= {"casting", "where"}:
        return _assign(np.copyto, value=1)
    if fn is np.ndarray.fill and n == 2 and not kwnames:
        return _assign(np.ndarray.fill, value=1)
    if fn in _LINEAR_IN_PLACE and n == 2 and not kwnames:
        return _linear_in_place(fn)
    if (
        (fn is np.matmul or fn is np.dot)
        and n == 2
        and kwnames == ("out",)
        and not tangent_only  # (reverse mode differentiates the plain form: no state there)
        and all(_matrix(ty) for ty in types)
    ):
        return _matmul_out(t.cast(t.Callable[..., t.Any], fn))
    return None


def plain(
    fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]
) -> tuple[object, tuple[T.Type, ...], tuple[str, ...], int] | None:
    """The call without its write (``z *= x`` is ``z * x``; ``f(x, out=z)`` is ``f(x)``) and
    the operand written: ``(plain_fn, its types, its keywords, written)``, or None."""
    n = len(types) - len(kwnames)
    if fn in IN_PLACE_OF and n == 2 and not kwnames and _array(types[0]):
        return IN_PLACE_OF[fn], types, (), 0
    if "out" in kwnames and "where" not in kwnames:
        i = kwnames.index("out")
        keep = [k for k in range(len(types)) if k != n + i]
        rest = tuple(k for k in kwnames if k != "out")
        return fn, tuple(types[k] for k in keep), rest, n + i
    return None


def _matrix(ty: T.Type) -> bool:
    return isinstance(ty, T.Array) and ty.dtype == "float64" and ty.ndim in (1, 2)


# --------------------------------------------------------------------------------------------
# The emitters


def _assign(fn: t.Callable[..., t.Any], value: int) -> WriteEmit:
    """``fn(z, ..., x, ...)`` writes ``x`` (operand ``value``) into ``z``: the same call writes
    ``dx`` (or 0) into ``dz``; the other operands (an index, ``where=``) are the primal's."""

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        z = b.call(fn, *args, kwargs=kwargs, type=T.NONE)
        dz, dx = d[0], d[value]
        assert dz is not None  # (the transform gives every written array a tangent)
        targs = [dz, *args[1:]]
        targs[value] = Constant(0.0) if dx is None else dx
        tkw = {k: v for k, v in kwargs.items() if k != "casting"}
        b.call(fn, *targs, kwargs=tkw, type=T.NONE)
        return z, None

    return emit


def _linear_in_place(fn: object) -> WriteEmit:
    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        z = b.call(fn, *args, type=args[0].type)
        dz, dx = d
        assert dz is not None
        if dx is not None:
            b.call(fn, dz, dx, type=args[0].type)
        return z, dz

    return emit


class MatmulOut:
    """``np.matmul(A, B, out=C)`` with its tangent, the stateful way: ``dC = dA @ B + A @ dB``
    goes into ``dC``, the second product through a buffer this call site keeps (one per
    thread: two threads running one rule must not share it), so a warm call allocates
    nothing.  The tangent is computed before the primal writes ``C``: ``C`` may be ``A`` or
    ``B`` (NumPy buffers the overlap of each product itself)."""

    __slots__ = ("fn", "local", "__weakref__")

    def __init__(self, fn: t.Callable[..., t.Any]) -> None:
        self.fn = fn
        self.local = threading.local()
        runtime.register_object(self, f"matmul_out_{fn.__name__}")  # (named in the IR's text)

    def __call__(self, a: t.Any, b: t.Any, c: t.Any, da: t.Any, db: t.Any, dc: t.Any) -> t.Any:
        fn = self.fn
        if db is not None and da is not None:
            buf = getattr(self.local, "buf", None)
            if buf is None or buf.shape != dc.shape:
                buf = self.local.buf = np.empty(dc.shape)
            fn(a, db, out=buf)
            fn(da, b, out=dc)
            dc += buf
        elif db is not None:
            fn(a, db, out=dc)
        elif da is not None:
            fn(da, b, out=dc)
        else:
            dc.fill(0.0)
        return fn(a, b, out=c)

    def __repr__(self) -> str:
        return f"MatmulOut({self.fn.__name__})"


def _matmul_out(fn: t.Callable[..., t.Any]) -> WriteEmit:
    site = MatmulOut(fn)  # (one per call site: ``direct`` is asked once per site)

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        da, db, dc = (Constant(None) if x is None else x for x in d)
        z = b.call(site, *args, kwargs["out"], da, db, dc, type=kwargs["out"].type)
        return z, dc

    return emit


class StatefulForward:
    """A user's stateful forward rule at one call site: ``rule(state, *args, *tangents,
    **kwargs) -> (z, dz, state)`` gets the state it returned the last time it ran here (in
    this thread), None the first time."""

    __slots__ = ("fn", "rule", "local", "__weakref__")

    def __init__(self, fn: object, rule: t.Callable[..., t.Any]) -> None:
        self.fn, self.rule = fn, rule
        self.local = threading.local()
        runtime.register_object(self, f"stateful_{getattr(fn, '__name__', 'rule')}")

    def __call__(self, *a: t.Any, **kwargs: t.Any) -> tuple[t.Any, t.Any]:
        local = self.local
        z, dz, local.state = self.rule(getattr(local, "state", None), *a, **kwargs)
        return z, dz

    def __repr__(self) -> str:
        return f"StatefulForward({getattr(self.fn, '__name__', self.fn)!s})"


def _user_emit(fn: object, rule: t.Callable[..., t.Any], n: int) -> WriteEmit:
    site = StatefulForward(fn, rule)

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        tangents = [Constant(None) if x is None else x for x in d[:n]]
        made = b.call(site, *args, *tangents, kwargs=kwargs, type=T.ANY)
        z = b.call(operator.getitem, made, 0, type=T.ANY)
        return z, b.call(operator.getitem, made, 1, type=T.ANY)

    return emit


def register_writing(
    fn: object, writes: t.Iterable[int], rule: t.Callable[..., t.Any]
) -> None:
    """``rule`` is the stateful forward rule of ``fn``, which writes into its positional
    arguments ``writes`` (``gibbous.frule(fn, writes=...)``)."""
    _USER[fn] = (tuple(writes), rule)


# --------------------------------------------------------------------------------------------
# Run-time helpers the transform writes calls of


def fresh(z: t.Any, dz: t.Any, *pairs: t.Any) -> t.Any:
    """``dz`` as the tangent of ``z``, an array a write may reach: aliased as ``z`` is.
    ``pairs`` are ``(a, da)`` of the call's operands with tangents.  Where ``z`` is a view of
    ``a``, ``dz`` must be the same view of ``da`` (else a write through ``z`` would miss
    ``dz``: refused); where ``z`` is new memory, ``dz`` must be too (a rule may return an
    operand's tangent itself, ``d(x + 0) = dx``: copied)."""
    if type(z) is not np.ndarray:
        return dz
    copy = type(dz) is not np.ndarray or dz.shape != z.shape or not dz.flags.writeable
    for i in range(0, len(pairs), 2):
        a, da = pairs[i], pairs[i + 1]
        if da is None or type(a) is not np.ndarray:
            continue
        shares = np.may_share_memory(z, a)
        if shares and (copy or not np.may_share_memory(dz, da)):
            raise ForwardModeError(
                "forward mode: an array written into later is a view of another, but its "
                "tangent is not the same view of the other's tangent (a reshape that copied "
                "one and not the other?); copy the array before writing into it"
            )
        if not shares and type(dz) is np.ndarray and np.may_share_memory(dz, da):
            copy = True
    if copy:
        return np.array(np.broadcast_to(dz, z.shape), dtype=np.result_type(z.dtype, np.float64))
    return dz


runtime.register_object(fresh, "forward.fresh")
