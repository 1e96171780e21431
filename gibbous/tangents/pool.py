"""Recycled memory for large zero fdata.

Every array a rule returns gets zero fdata, which pullbacks accumulate into.  For large arrays
fresh memory is the expensive part: each 4 KiB page faults on first touch (measured here: an
8 MB fdata costs about 3 ms to zero fresh, 0.5 ms to zero again warm).  A rule's result fdata
is unreachable once that rule's pullback has run: the reverse pass has restored whatever the
forward pass stored it into (containers, attributes, cells, the tape entries that mention it,
all pushed after the call and so popped before its pullback).  So a pullback that consumed its
result's fdata may hand it back here with ``release``, and ``zeros`` gives it out again, zeroed,
to the next result of that shape and dtype: in a loop of gradient calls the same few buffers
serve every call, like a caching allocator.

Only arrays of at least ``LARGE_BYTES`` are kept (below that, ``np.zeros`` is as quick), at most
``LIMIT_BYTES`` in all; beyond that ``release`` drops the array.  Arrays handed out are never
referenced here again, so one given to a user (a gradient) is theirs.  A pullback must release
an fdata at most once, and only one it made itself (``zeros`` for a result it returned).
"""

from __future__ import annotations

import threading
import typing as t

import numpy as np

Array = np.ndarray[t.Any, t.Any]

#: Zero arrays at least this large (glibc's default threshold for fresh mmap'd memory) are
#: recycled, and when new are allocated and then filled rather than calloc'd: fdata is read
#: before it is written, and a calloc'd fresh page maps the shared zero page on that read and
#: faults again on the write (five 2 MB zeros + add: 5.4 ms calloc'd, 3.2 ms filled).
LARGE_BYTES = 1 << 17

#: The most memory the pool holds between uses.
LIMIT_BYTES = 1 << 28

_free: dict[tuple[tuple[int, ...], str], list[Array]] = {}
_held = 0
# Threads share the pool: a buffer goes to one of them only, and ``_held`` counts what is
# there.  Taken for large arrays only, whose zeroing costs far more.
_lock = threading.Lock()


def zeros(shape: tuple[int, ...], dtype: np.dtype[t.Any], nbytes: int) -> Array:
    """A C-contiguous zero array of ``shape`` and ``dtype`` (``nbytes`` bytes)."""
    a = _take(shape, dtype, nbytes) if nbytes >= LARGE_BYTES else None  # (a call saved)
    if a is None:
        return fresh_zeros(shape, dtype, nbytes)
    a.fill(0)
    return a


def empty(shape: tuple[int, ...], dtype: np.dtype[t.Any], nbytes: int) -> Array:
    """A C-contiguous array of ``shape`` and ``dtype``, its contents arbitrary: scratch memory
    for one computation (an ``out=``), given back with ``release`` when done.  A large one
    from the pool saves the page faults of fresh memory and, unlike ``zeros``, the fill."""
    a = _take(shape, dtype, nbytes) if nbytes >= LARGE_BYTES else None
    return np.empty(shape, dtype) if a is None else a


def _take(shape: tuple[int, ...], dtype: np.dtype[t.Any], nbytes: int) -> Array | None:
    """A held array of ``shape`` and ``dtype`` (large), out of the pool; None if none."""
    global _held
    free = _free.get((shape, dtype.str))
    if not free:
        return None
    with _lock:
        a = free.pop() if free else None
        if a is not None:
            _held -= nbytes
    return a


def fresh_zeros(shape: tuple[int, ...], dtype: np.dtype[t.Any], nbytes: int) -> Array:
    """New C-contiguous zeros, not from the pool: ``np.zeros`` when small, allocated and then
    filled when large (see ``LARGE_BYTES``)."""
    if nbytes < LARGE_BYTES:
        return np.zeros(shape, dtype)
    a = np.empty(shape, dtype)
    a.fill(0)
    return a


def release(a: Array) -> None:
    """Give back a large array nothing references any more (see the module's docstring)."""
    global _held
    nbytes = a.nbytes
    if nbytes < LARGE_BYTES:
        return
    if a.base is not None or not a.flags.c_contiguous:  # not an array ``zeros`` made
        return
    with _lock:
        if _held + nbytes > LIMIT_BYTES:
            return
        _free.setdefault((a.shape, a.dtype.str), []).append(a)
        _held += nbytes


def release_unless_passed(a: Array, *passed: object) -> None:
    """``release(a)``, unless one of ``passed`` (cotangents handed on as values, which may be
    ``a`` itself: ``x + y`` passes its own) may share its memory."""
    if a.nbytes < LARGE_BYTES:
        return
    for p in passed:
        if type(p) is np.ndarray and np.may_share_memory(a, p):
            return
    release(a)


def clear() -> None:
    """Drop every array held."""
    global _held
    with _lock:
        _free.clear()
        _held = 0


def held() -> int:
    """Bytes held between uses."""
    return _held
