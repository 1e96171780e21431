"""Copies, pairings and sums of values and tangents that respect shared memory.

Two arguments that are views of one array are one piece of memory.  Copies keep such sharing
(``Copier`` copies each memory owner once and rebuilds the views at the same offsets), and
pairings count every element of memory once (``Pairing`` writes both sides into one buffer per
owner, then takes one dot product per buffer).  Writing an element twice through two views is
harmless because both writes carry the same value: every write here is an *assignment* from
values that share memory the same way, never an increment.
"""

from __future__ import annotations

import copy
import ctypes
import types as pytypes
import typing as t
import warnings

import attrs
import numpy as np

from gibbous.tangents.model import NO_TANGENT, MutableTangent, Tangent
from gibbous.testing.structure import (
    INEXACT,
    Array,
    address,
    bound_self,
    child,
    closure_cells,
    is_atom,
    is_inexact_scalar,
    leaves,
    object_fields,
)

# --------------------------------------------------------------------------------------------
# Memory: where an array's elements live


def _address_bounds(a: Array) -> tuple[int, int]:
    """The first and one-past-last byte the array's elements touch."""
    low = high = address(a)
    for n, stride in zip(a.shape, a.strides):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return low, high + a.itemsize


def memory_span(a: Array) -> tuple[object, int, int]:
    """``(owner, low, high)``: the object owning ``a``'s memory (the end of its ``.base``
    chain) and the bytes it spans; arrays of one owner may share memory, others never do."""
    owner: object = a
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    if isinstance(owner, np.ndarray):
        low, high = _address_bounds(owner)
    else:
        try:  # bytes, mmap, ...: their whole buffer
            raw = np.frombuffer(t.cast(t.Any, owner), dtype=np.uint8)
            low, high = address(raw), address(raw) + raw.nbytes
        except (TypeError, ValueError):
            owner, (low, high) = a, _address_bounds(a)
    first, last = _address_bounds(a)
    if first < low or last > high:  # outside its owner (stride tricks): on its own
        return a, first, last
    return owner, low, high


def _read_bytes(low: int, n: int) -> Array:
    """The ``n`` bytes at address ``low``, as a uint8 array over that memory (keep its owner
    alive while using it)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(low))


@attrs.frozen(eq=False)
class _Region:
    owner: object  # kept alive, so that its id stays unique
    low: int
    buffer: Array  # uint8, starting at the same address modulo 64 as ``low``


def _aligned_bytes(n: int, like: int) -> Array:
    """``n`` bytes at an address congruent to ``like`` modulo 64, so that copies keep their
    original's alignment (BLAS may round differently for other alignments)."""
    raw = np.empty(n + 64, np.uint8)
    shift = (like - address(raw)) % 64
    return raw[shift : shift + n]


# --------------------------------------------------------------------------------------------
# Copying, optionally perturbed


class Copier:
    """Copies values keeping all their sharing: an object reached twice is copied once, and
    arrays that share memory get copies sharing memory the same way.

    With a step ``h``, ``copy(x, d)`` also moves the copy along a tangent ``d`` of ``x``:
    floats become ``x + h d`` (or ``x (1 + h d)`` with ``relative``).  Values that carry no
    tangent are copied as they are; immutable ones are not copied at all.  One copier makes one
    consistent copy of several values (the arguments of a call).
    """

    def __init__(self, h: float = 0.0, *, relative: bool = False) -> None:
        self.h = h
        self.relative = relative
        self._memo: dict[int, tuple[object, object]] = {}
        self._regions: dict[int, _Region] = {}
        self._deep: dict[int, t.Any] = {}

    def copy(self, x: t.Any, d: t.Any = NO_TANGENT) -> t.Any:
        if is_inexact_scalar(x):
            return self._scalar(x, d)
        if is_atom(x):
            return x
        hit = self._memo.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        new: t.Any
        if isinstance(x, np.ndarray):
            new = self._array(x, d)
        elif isinstance(x, tuple):
            items = [self.copy(v, child(d, ("index", i))) for i, v in enumerate(x)]
            new = tuple(items) if type(x) is tuple else _rebuild_tuple(x, items)
        else:
            return self._container(x, d)
        self._memo[id(x)] = (x, new)
        return new

    def _remember(self, x: object, new: object) -> None:
        # Before the parts are copied: a container may contain itself.
        self._memo[id(x)] = (x, new)

    def _container(self, x: t.Any, d: t.Any) -> t.Any:
        if isinstance(x, list):
            new_list = copy.copy(x)
            self._remember(x, new_list)
            new_list[:] = [self.copy(v, child(d, ("index", i))) for i, v in enumerate(x)]
            return new_list
        if isinstance(x, dict):
            new_dict = copy.copy(x)
            self._remember(x, new_dict)
            for k, v in x.items():
                new_dict[k] = self.copy(v, child(d, ("key", k)))
            return new_dict
        if isinstance(x, pytypes.MethodType):
            method = pytypes.MethodType(
                self.copy(x.__func__, child(d, ("attr", "__func__"))),
                self.copy(x.__self__, child(d, ("attr", "__self__"))),
            )
            self._remember(x, method)
            return method
        owner = bound_self(x)
        if owner is not None:
            bound = getattr(self.copy(owner, child(d, ("attr", "__self__"))), x.__name__)
            self._remember(x, bound)
            return bound
        if isinstance(x, pytypes.FunctionType):
            return self._closure(x, d)
        if isinstance(x, pytypes.CellType):  # copy/deepcopy refuse cells
            cell = pytypes.CellType()
            self._remember(x, cell)
            try:
                contents = x.cell_contents
            except ValueError:  # an empty cell
                return cell
            cell.cell_contents = self.copy(contents, child(d, ("attr", "cell_contents")))
            return cell
        fields = object_fields(x)
        if not fields:
            return self._opaque(x)
        try:
            new = copy.copy(x)
        except Exception:
            return self._opaque(x)
        self._remember(x, new)
        for name, value in fields.items():
            object.__setattr__(new, name, self.copy(value, child(d, ("attr", name))))
        return new

    def _closure(self, fn: pytypes.FunctionType, d: t.Any) -> pytypes.FunctionType:
        cells = tuple(pytypes.CellType() for _ in fn.__code__.co_freevars)
        new = pytypes.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__dict__.update(fn.__dict__)
        self._remember(fn, new)
        contents = closure_cells(fn)
        for name, cell in zip(fn.__code__.co_freevars, cells):
            if name in contents:
                cell.cell_contents = self.copy(contents[name], child(d, ("attr", name)))
        return new

    def _opaque(self, x: object) -> object:
        # Sets, bytearrays, extension objects: nothing differentiable inside, but possibly
        # mutable, so the callee must not share them with the caller.
        try:
            with warnings.catch_warnings():
                # Python 3.12 deprecates copying itertools objects (np.ndindex holds one);
                # when it stops, the except arm below shares them.
                warnings.simplefilter("ignore", DeprecationWarning)
                new = copy.deepcopy(x, self._deep)
        except Exception:  # not copyable (locks, ...): shared, as it is
            new = x
        self._remember(x, new)
        return new

    def _scalar(self, x: t.Any, d: t.Any) -> t.Any:
        if d is NO_TANGENT or not self.h:
            return x
        step = self.h * d * x if self.relative else self.h * d
        cls = type(x) if isinstance(x, (np.floating, np.complexfloating)) else type(x + step)
        return cls(x + step)

    def _array(self, x: Array, d: t.Any) -> Array:
        if x.dtype.hasobject:  # raw bytes of object pointers must not be copied
            return copy.deepcopy(x, self._deep)
        if x.size == 0:
            return np.empty_like(x)
        owner, low, high = memory_span(x)
        region = self._regions.get(id(owner))
        if region is None or region.owner is not owner:
            region = _Region(owner, low, _aligned_bytes(high - low, low))
            region.buffer[...] = _read_bytes(low, high - low)
            self._regions[id(owner)] = region
        offset = address(x) - region.low
        new = np.ndarray(x.shape, x.dtype, buffer=region.buffer, offset=offset, strides=x.strides)
        if type(x) is not np.ndarray:
            new = new.view(type(x))
        if isinstance(d, np.ndarray) and self.h:
            # An assignment, not an increment: an element reached through two views gets the
            # same value twice.
            new[...] = x + self.h * d * x if self.relative else x + self.h * d
        new.flags.writeable = x.flags.writeable
        return new


def _rebuild_tuple(x: tuple[t.Any, ...], items: list[t.Any]) -> tuple[t.Any, ...]:
    if hasattr(x, "_fields"):  # a NamedTuple
        return type(x)(*items)
    return type(x)(items)


def copy_values(xs: t.Sequence[t.Any]) -> tuple[t.Any, ...]:
    """A copy of several values with all their sharing (among them too)."""
    copier = Copier()
    return tuple(copier.copy(x) for x in xs)


# --------------------------------------------------------------------------------------------
# Pairing: <a, b> over memory


@attrs.frozen(eq=False)
class _Accumulator:
    """Both sides of a pairing for the arrays of one memory owner, laid out like that memory."""

    owner: object
    low: int
    a: Array  # uint8 buffers the size of the owner's memory
    b: Array
    unit: list[np.dtype[t.Any]]  # the real dtype of the elements written (one, or mixed)


class Pairing:
    """``Re <a, b>`` summed over leaves, each element of memory counted once."""

    def __init__(self) -> None:
        self._scalars = 0.0
        self._owners: dict[int, _Accumulator] = {}
        self._loose = 0.0  # arrays whose layout the accumulators cannot hold

    def add(self, primal: t.Any, a: t.Any, b: t.Any) -> None:
        if a is NO_TANGENT or b is NO_TANGENT:
            return
        if not isinstance(primal, np.ndarray):
            self._scalars += float((np.conj(a) * b).real)
            return
        if primal.size == 0:
            return
        unit = np.dtype(primal.real.dtype)
        owner, low, high = memory_span(primal)
        offset = address(primal) - low
        if offset % unit.itemsize or any(s % unit.itemsize for s in primal.strides):
            self._loose += float(np.vdot(a, b).real)
            return
        acc = self._owners.get(id(owner))
        if acc is None or acc.owner is not owner:
            n = high - low
            acc = _Accumulator(owner, low, np.zeros(n, np.uint8), np.zeros(n, np.uint8), [])
            self._owners[id(owner)] = acc
        if unit not in acc.unit:
            acc.unit.append(unit)
        for buffer, value in ((acc.a, a), (acc.b, b)):
            view = np.ndarray(
                primal.shape, primal.dtype, buffer=buffer, offset=offset, strides=primal.strides
            )
            view[...] = value

    def total(self) -> float:
        total = self._scalars + self._loose
        for acc in self._owners.values():
            if len(acc.unit) != 1:
                raise ValueError(
                    "arrays of different float precisions view the same memory; the rule tests "
                    "cannot pair their tangents"
                )
            (unit,) = acc.unit
            n = acc.a.nbytes // unit.itemsize * unit.itemsize
            a = acc.a[:n].view(unit)
            b = acc.b[:n].view(unit)
            total += float(np.dot(a.astype(np.float64), b.astype(np.float64)))
        return total


def inner(
    roots: t.Sequence[tuple[str, object]], a: t.Sequence[t.Any], b: t.Sequence[t.Any]
) -> float:
    """``<a, b>`` for tangents ``a`` and ``b`` of the values ``roots``."""
    pairing = Pairing()
    for leaf in leaves(roots, a, b):
        pairing.add(leaf.primal, *leaf.values)
    return pairing.total()


# --------------------------------------------------------------------------------------------
# Arithmetic on tangents


def add_into(live: t.Any, snapshot: t.Any, s: t.Any, seen: set[int]) -> t.Any:
    """Make ``live`` (a tangent, updated in place where it has identity) hold
    ``snapshot + s``, where ``snapshot`` is a copy of ``live`` taken before any of these writes;
    returns the new value of ``live`` (new for scalars and immutable containers).

    Assigning ``snapshot + s`` rather than adding ``s`` makes a write through two overlapping
    views land once."""
    if s is NO_TANGENT:
        return live
    if live is NO_TANGENT:
        raise ValueError("a cotangent for a value whose fdata is NoTangent()")
    if isinstance(live, np.ndarray):
        if id(live) not in seen:
            seen.add(id(live))
            np.add(snapshot, s, out=live)
        return live
    if isinstance(live, INEXACT):
        return type(live)(snapshot + s)
    if isinstance(live, tuple):
        return tuple(
            add_into(v, snapshot[i], child(s, ("index", i)), seen) for i, v in enumerate(live)
        )
    if isinstance(live, Tangent):
        return Tangent(
            {
                n: add_into(v, snapshot.fields[n], child(s, ("attr", n)), seen)
                for n, v in live.fields.items()
            }
        )
    if id(live) in seen:
        return live
    seen.add(id(live))
    if isinstance(live, list):
        for i, v in enumerate(live):
            live[i] = add_into(v, snapshot[i], child(s, ("index", i)), seen)
    elif isinstance(live, dict):
        for k, v in live.items():
            live[k] = add_into(v, snapshot[k], child(s, ("key", k)), seen)
    elif isinstance(live, MutableTangent):
        for n, v in live.fields.items():
            live.fields[n] = add_into(v, snapshot.fields[n], child(s, ("attr", n)), seen)
    else:
        raise TypeError(f"not a tangent: {live!r}")
    return live


def subtract(a: t.Any, b: t.Any, memo: dict[int, t.Any] | None = None) -> t.Any:
    """``a - b`` for two tangents of one value, as a new tangent (parts reached twice in ``a``
    are one part of the result)."""
    memo = {} if memo is None else memo
    if a is NO_TANGENT:
        return NO_TANGENT
    if isinstance(a, INEXACT):
        return type(a)(a - b)
    if isinstance(a, tuple):
        return tuple(subtract(v, b[i], memo) for i, v in enumerate(a))
    if isinstance(a, Tangent):
        return Tangent({n: subtract(v, b.fields[n], memo) for n, v in a.fields.items()})
    if id(a) in memo:
        return memo[id(a)]
    result: t.Any
    if isinstance(a, np.ndarray):
        result = memo[id(a)] = a - b
    elif isinstance(a, list):
        result = memo[id(a)] = []
        result.extend(subtract(v, b[i], memo) for i, v in enumerate(a))
    elif isinstance(a, dict):
        result = memo[id(a)] = {}
        result.update((k, subtract(v, b[k], memo)) for k, v in a.items())
    elif isinstance(a, MutableTangent):
        result = memo[id(a)] = MutableTangent({})
        result.fields.update((n, subtract(v, b.fields[n], memo)) for n, v in a.fields.items())
    else:
        raise TypeError(f"not a tangent: {a!r}")
    return result
