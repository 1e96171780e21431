"""Per-node buffers: the arrays an array site of a derived rule computes into, kept across calls.

An array form (``gibbous.rules.inline``) computes its primal result as NumPy does, into a new
array.  Where that result does not escape the forward program (the AD pass decides:
``gibbous.reverse.primal_pass``, "buffered"), the site instead computes into a buffer it owns,
with ``out=``, and a warm call allocates nothing for it.

A site may run several times before the reverse pass reaches it (a loop, a caller's loop), and
every pending run needs its own result: the reverse pass reads it.  So, as a stateful rule keeps
one state per pending depth (``gibbous.rules.stateful``), a site keeps one buffer per depth, in
a ``SiteBuffers`` bound to each rule instance the way the tape is:

* the forward program's ``into1``, ``into_a`` and ``into_aa`` compute into the buffer at the
  site's depth and take the depth (``depth += 1``);
* the reverse program gives it back (``give_back``) once the site's derivative has read it.

Pushes and pops of depths pair up last in first out, as the tape's do, and the tape's own order
checks (``PullbackOrderError``) cover them.  An abandoned pass leaves its rule dirty, and a
reset (``DerivedRule.reset``) starts every site at depth 0 again.

**Kept under ``prepare_gradient``.**  A site uses its buffers only while its rule instance
keeps them (``SiteBuffers.keep``); the forward and reverse programs test the flag and otherwise
compute as the primal does (``gibbous.backends.numpy.adcodegen``).  ``prepare_gradient`` asks
for them (``MODE.keep``, per thread: its promise is a warm call that allocates nothing);
``value_and_gradient`` does not.  Measured with other work between gradient calls
(``benchmarks/peers.py``), buffers kept since the last call lost to the memory ``malloc`` had
just freed, small arrays and large alike: the RNN 725 → 802 µs, Rosenbrock at 10⁶ 23.3 →
26.4 ms (medians; docs/decisions.md).  The flag changes only between calls, when nothing is pending
(``DerivedRule.keep_buffers``): every pending run of a site is of one kind.

A buffer is used only when the operands' shapes are the very shapes that made it: ``out=``
of a larger array broadcasts the operands to it (silently), and a 0-d result is a NumPy
scalar, never a buffer.  Any other call computes as the primal does and keeps its result as
the depth's new buffer, if it is a float64 array.

**Reverse-pass scratch.**  The temporaries of a site's derivative (``2 g x`` before it is added
into x's fdata, a cotangent handed on as a value) go into the site's ``scratch`` arrays, one
per temporary the adjoint makes (``scratch(site, k, shape)``), not one per depth: a temporary
is read within the reverse of the block that made it (a cotangent passed as a value goes to a
producer in the same block: ``gibbous.reverse.primal_pass``, "by value"), before the site's
derivative runs again.  Every array site of a form that asks for it (``("site", -1)`` among
its saves) has scratch, whether or not its result is buffered.
"""

from __future__ import annotations

import operator
import threading
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.tangents import pool

Array = np.ndarray[t.Any, t.Any]


class _Mode(threading.local):
    """Per thread: whether the calls it makes keep buffers (see the module's doc)."""

    keep = False


MODE = _Mode()

_NDARRAY = np.ndarray
_F64 = np.float64


class SiteBuffers:
    """One array site's buffers, one per pending depth, with the operand shapes that made each.
    (Plain slots: read on every call of the forward program.)"""

    __slots__ = ("arrays", "keys", "depth", "scratch", "fdatas", "keep")

    def __init__(self) -> None:
        self.keep = MODE.keep  # (a child instance made during a call: that call's mode)
        self.arrays: list[Array | None] = []
        self.keys: list[object] = []
        self.depth = 0
        self.scratch: list[Array | None] = []
        self.fdatas: list[Array | None] = []  # the results' fdata, per depth (``zeros``)

    def reset(self) -> None:
        """Forget pending runs and free the buffers (after an abandoned pass, which may have
        reached depths a normal call does not)."""
        self.arrays.clear()
        self.keys.clear()
        self.depth = 0
        self.scratch.clear()
        self.fdatas.clear()

    def __repr__(self) -> str:
        return f"<SiteBuffers: depth {self.depth}, {len(self.arrays)} buffer(s)>"


def _keep(site: SiteBuffers, d: int, z: t.Any, key: object) -> t.Any:
    """Depth ``d``'s run computed ``z`` anew from operands of shapes ``key`` (None: operands
    of a kind never buffered): keep it as the buffer, take the depth, return ``z``."""
    buf = z if type(z) is _NDARRAY and z.dtype == _F64 and key is not None else None
    if d < len(site.arrays):
        site.arrays[d] = buf
        site.keys[d] = key
    else:
        site.arrays.append(buf)
        site.keys.append(key)
    site.depth = d + 1
    return z


# One helper per kind of site, as the static types say: each tests what makes the buffer's
# shape the result's shape, no more.  An array operand of another class (a subclass) is
# never computed into a buffer.  The programs call them only while the site keeps buffers.


def into1(site: SiteBuffers, fn: t.Callable[..., t.Any], x: t.Any) -> t.Any:
    """``fn(x)`` (a ufunc) into the site's buffer at its depth; the depth taken."""
    d = site.depth
    if d < len(site.arrays):
        buf = site.arrays[d]
        if buf is not None and type(x) is _NDARRAY and x.shape == buf.shape:
            fn(x, out=buf)  # (raising, it takes no depth: the rule is dirty anyway)
            site.depth = d + 1
            return buf
    return _keep(site, d, fn(x), x.shape if type(x) is _NDARRAY else None)


def into_a(site: SiteBuffers, fn: t.Callable[..., t.Any], x: t.Any, y: t.Any, a: t.Any) -> t.Any:
    """``fn(x, y)``, one of them (``a``) an array and the other a scalar: the result has a's
    shape."""
    d = site.depth
    if d < len(site.arrays):
        buf = site.arrays[d]
        if buf is not None and type(a) is _NDARRAY and a.shape == buf.shape:
            fn(x, y, out=buf)
            site.depth = d + 1
            return buf
    return _keep(site, d, fn(x, y), a.shape if type(a) is _NDARRAY else None)


def into_aa(site: SiteBuffers, fn: t.Callable[..., t.Any], x: t.Any, y: t.Any) -> t.Any:
    """``fn(x, y)`` of two arrays: the buffer's shape if both have it, else (broadcasting, a
    product) the result's shape for the operand shapes that made the buffer."""
    d = site.depth
    if d < len(site.arrays):
        buf = site.arrays[d]
        if buf is not None and type(x) is _NDARRAY and type(y) is _NDARRAY:
            s = buf.shape
            if x.shape == s and y.shape == s or site.keys[d] == (x.shape, y.shape):
                fn(x, y, out=buf)
                site.depth = d + 1
                return buf
    both = type(x) is _NDARRAY and type(y) is _NDARRAY
    return _keep(site, d, fn(x, y), (x.shape, y.shape) if both else None)


def zeros(site: SiteBuffers, z: t.Any, make: t.Callable[[t.Any], t.Any]) -> t.Any:
    """The fdata of ``z``, the result the site's latest run just computed (``into*`` took its
    depth): the depth's fdata buffer, zeroed, where ``z`` is a buffer's size; else what
    ``make`` (``new_fdata``) gives, kept for the next call if it is a float64 array."""
    d = site.depth - 1
    fdatas = site.fdatas
    if d < len(fdatas):
        f = fdatas[d]
        if f is not None and type(z) is _NDARRAY and z.shape == f.shape:
            f.fill(0)
            return f
    else:
        fdatas.extend([None] * (d + 1 - len(fdatas)))
    f = make(z)
    keep = type(f) is _NDARRAY and f.dtype == _F64 and f.flags.c_contiguous
    fdatas[d] = f if keep else None
    return f


def release(site: SiteBuffers, fdata: t.Any, *passed: object) -> None:
    """The reverse pass is done with a buffered site's result fdata: the pool takes it back
    (``pool.release_unless_passed``: unless a cotangent handed on may be that array) unless
    it is the site's own buffer."""
    if not site.keep:
        pool.release_unless_passed(fdata, *passed)


def give_back(site: SiteBuffers) -> None:
    """The reverse pass is done with the site's latest pending run: its depth is free."""
    site.depth -= 1


def scratch(site: SiteBuffers | None, k: int, shape: tuple[int, ...]) -> Array | None:
    """The site's ``k``-th float64 scratch array, of ``shape`` (made anew when the shape
    changed), while it keeps buffers; else None, for ``out=``: a new array."""
    if site is None or not site.keep:
        return None
    arrays = site.scratch
    if k < len(arrays):
        a = arrays[k]
        if a is not None and a.shape == shape:
            return a
    else:
        arrays.extend([None] * (k + 1 - len(arrays)))
    a = arrays[k] = np.empty(shape)
    return a


for _helper in (into1, into_a, into_aa, zeros, release, give_back):
    runtime.register_object(_helper, f"buffers.{_helper.__name__}")  # for the IR's text


# What computes a callable's result into ``out=``, where it is not the callable itself.
_OPERATORS: dict[object, t.Callable[..., t.Any]] = {
    operator.add: np.add,
    operator.sub: np.subtract,
    operator.mul: np.multiply,
    operator.truediv: np.true_divide,
    operator.pow: np.power,
    operator.neg: np.negative,
    operator.matmul: np.matmul,
}


def out_function(callee: object, args: t.Sequence[object]) -> t.Callable[..., t.Any] | None:
    """What computes ``callee(*args)`` with ``out=``, bit for bit: a ufunc itself, NumPy's
    ufunc for an operator, ``np.dot`` itself; None for anything else.  ``x ** 2`` is
    ``np.square`` (what NumPy computes for it), so its site passes ``x`` alone."""
    if callee is operator.pow and len(args) == 2 and type(args[1]) is int and args[1] == 2:
        return np.square
    if isinstance(callee, np.ufunc) and callee.nout == 1 and callee.nin == len(args):
        return callee
    if callee is np.dot and len(args) == 2:
        return np.dot
    fn = _OPERATORS.get(callee)
    if fn is None or not isinstance(fn, np.ufunc) or fn.nin != len(args):
        return None
    return fn
