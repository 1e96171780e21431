"""Deferred outer products: a loop's ``dA += g vᵀ`` added as one matrix product at the end.

The reverse of ``z = A @ v`` adds the outer product ``g vᵀ`` into A's fdata.  In a loop over
a matrix that does not change (an RNN's ``h = np.tanh(W @ h + U @ x[t])``), that is one outer
product and one addition into the whole of ``dA`` per step: two passes over the matrix, and
two NumPy calls, where the step's own work is a matrix-vector product.  The sum over the
steps, ``Σ g_k v_kᵀ``, is the matrix product ``Gᵀ V`` of the vectors stacked as rows: one
call, one pass over ``dA``, done by BLAS.

An ``OuterSums`` is a site's stack of those rows.  ``add`` copies ``g`` and ``v`` into the
next row (they are scratch and saved values that later steps overwrite or give back) instead
of touching ``dA``; ``flush`` adds ``Gᵀ V`` into ``dA`` and empties the stack.  The AD pass
(``gibbous.reverse.defer``) defers a site only where nothing reads ``dA`` before the reverse
program returns, and the reverse program flushes every stack just before it returns.  A stack
holds at most ``ROWS`` rows, fewer for long vectors (``ELEMENTS`` numbers in all): a full
stack is flushed at once, so the memory a site keeps is bounded whatever the loop's length.

The sum is the same sum, added in another order: the gradient differs from the one added step
by step in the last bits, as any two summation orders do.  The stacks and the product's
scratch are kept across calls (a warm call allocates nothing); the fdata a stack adds into is
held only until the flush.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir import runtime

Array = np.ndarray[t.Any, t.Any]

#: Rows a stack holds before it is flushed, and the numbers its two halves may hold in all.
ROWS = 256
ELEMENTS = 1 << 16

_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)


class OuterSums:
    """One site's pending outer products ``left_k right_kᵀ``, all to be added into ``target``."""

    __slots__ = ("target", "left", "right", "n", "product")

    def __init__(self) -> None:
        self.target: Array | None = None
        self.left: Array | None = None  # rows of the left vectors
        self.right: Array | None = None  # rows of the right vectors
        self.n = 0
        self.product: Array | None = None  # scratch for Lᵀ R, the target's shape

    def reset(self) -> None:
        """Forget what is pending (an abandoned reverse pass) and free the stacks."""
        self.target = self.left = self.right = self.product = None
        self.n = 0

    def __repr__(self) -> str:
        return f"<OuterSums: {self.n} pending>"


def add(sums: OuterSums, acc: Array, left: Array, right: Array) -> None:
    """``acc += np.outer(left, right)``, deferred to the next ``flush`` of ``sums``.  An
    ``acc`` other than a float64 array of shape ``(len(left), len(right))`` is added into at
    once."""
    if acc is not sums.target:
        if sums.n:
            flush(sums)
        m, k = left.shape[0], right.shape[0]
        if type(acc) is not _NDARRAY or acc.dtype != _F64 or acc.shape != (m, k):
            np.add(acc, np.multiply(left[:, None], right), out=acc)
            return
        sums.target = acc
        _fit(sums, m, k)
    n = sums.n
    lrows = t.cast(Array, sums.left)
    if n == lrows.shape[0]:
        n = _grow(sums, lrows)
        lrows = t.cast(Array, sums.left)
    lrows[n] = left
    t.cast(Array, sums.right)[n] = right
    sums.n = n + 1


def flush(sums: OuterSums) -> None:
    """Add the pending outer products into their target, as one matrix product; empty the
    stack and let go of the target."""
    n, acc = sums.n, sums.target
    sums.n, sums.target = 0, None
    if not n or acc is None:
        return
    lrows, rrows = t.cast(Array, sums.left), t.cast(Array, sums.right)
    out = sums.product
    if out is None or out.shape != acc.shape:
        out = sums.product = np.empty(acc.shape)
    if n == 1:
        np.multiply(lrows[0][:, None], rrows[0], out=out)
    else:
        np.matmul(lrows[:n].T, rrows[:n], out=out)
    np.add(acc, out, out=acc)


def _fit(sums: OuterSums, m: int, k: int) -> None:
    """Stacks for vectors of lengths ``m`` and ``k`` (the ones kept, if they are)."""
    lrows, rrows = sums.left, sums.right
    if lrows is None or rrows is None or lrows.shape[1] != m or rrows.shape[1] != k:
        rows = min(8, _capacity(m, k))
        sums.left, sums.right = np.empty((rows, m)), np.empty((rows, k))


def _grow(sums: OuterSums, lrows: Array) -> int:
    """Room for one more row: the stacks twice as tall, up to the capacity; a full stack is
    flushed (into the same target, which stays).  The row to write next."""
    rrows = t.cast(Array, sums.right)
    m, k = lrows.shape[1], rrows.shape[1]
    rows: int = lrows.shape[0]
    cap = _capacity(m, k)
    if rows >= cap:
        acc = sums.target
        flush(sums)
        sums.target = acc
        return 0
    tall = min(cap, 2 * rows)
    left, right = np.empty((tall, m)), np.empty((tall, k))
    left[:rows] = lrows
    right[:rows] = rrows
    sums.left, sums.right = left, right
    return rows


def _capacity(m: int, k: int) -> int:
    return max(1, min(ROWS, ELEMENTS // max(1, m + k)))


for _helper in (add, flush):
    runtime.register_object(_helper, f"outer_sums.{_helper.__name__}")  # for the IR's text
