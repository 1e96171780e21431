"""Products: ``matmul`` (``@``), ``dot``, ``vdot``, ``inner``, ``outer``, ``tensordot``,
``einsum``, ``kron``, ``cross``.  Norms are in ``norms``, diagonals and traces in ``diagonals``,
factorizations in ``decompositions``.

Every combination of 1-D, 2-D and batched operands: a 1-D operand of ``matmul`` is a row
(left) or a column (right) for the product and loses that axis again in its gradient;
gradients of broadcast batch axes are summed back (``unbroadcast``).  Complex products are
holomorphic in each operand: ``z = a @ b`` gives ``a`` the gradient ``g @ conj(b).T``
(``vdot`` conjugates its first operand, so that one gets ``b conj(g)``).
``np.matmul(A, B, out=C)`` is the stateful rule of ``gibbous.rules.inplace``, and so is
``np.dot(A, B, out=C)`` of float matrices.

Products of two vectors give a scalar without allocating an array, so their rules must not
allocate either (the audit's policy): they are stateful rules whose scratch buffer
(``Scratch``) takes the gradient before it is added into the fdata.
"""

from __future__ import annotations

import numbers
import operator
import string
import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.rules.inplace import FLOAT_DTYPES, MatmulState, matmul_out
from gibbous.library.elementwise import tables
from gibbous.library.common import (
    ARRAY,
    CD,
    NO_SCRATCH,
    NT,
    NUMBER,
    NUMERIC,
    STR,
    Array,
    RuleResult,
    Scratch,
    bind,
    conj,
    cotangent,
    needs,
    new_fdata,
    nothing,
    send,
    shares_memory,
    unbroadcast,
    view_fdata,
    writable,
    zero_for,
)
from gibbous.rules.registry import Pullback, primitive, stateful_primitive
from gibbous.rules import frules
from gibbous.tangents.model import CoDual

StatefulResult = tuple[CD, Pullback, Scratch]


def _swap(x: Array) -> Array:
    return np.swapaxes(x, -1, -2)


def _keep(state: Scratch | None) -> Scratch:
    """The state to return from a call that used no buffer."""
    return NO_SCRATCH if state is None else state


# --------------------------------------------------------------------------------------------
# The sum of products of two vectors: a scalar, and buffers instead of temporaries


def _is_sum_of_products(z: object, ap: object, bp: object) -> bool:
    return (
        isinstance(z, np.generic)
        and type(ap) is np.ndarray
        and type(bp) is np.ndarray
        and ap.size == bp.size > 0
        and ap.dtype.kind in "fc"
        and bp.dtype.kind in "fc"
    )


def sum_of_products(
    state: Scratch | None, z: t.Any, a: CD, b: CD, conj_a: bool
) -> tuple[Pullback, Scratch]:
    """The pullback of ``z = sum(a * b)`` (``sum(conj(a) * b)`` for ``conj_a``, as ``vdot``)
    over equally many elements of ``a`` and ``b``, whatever their shapes; ``a`` gets ``g
    conj(b)`` (``b conj(g)``), ``b`` gets ``g conj(a)`` (``g a``), computed in the state's
    buffer (the real part goes to a real operand)."""
    ap, bp = a.primal, b.primal
    state = Scratch.fit(state, (ap.shape, z.dtype), (bp.shape, z.dtype))
    buf_a, buf_b = state.arrays
    complex_ = z.dtype.kind == "c"
    da, db = a.fdata, b.fdata
    want_a, want_b = type(da) is np.ndarray, type(db) is np.ndarray
    b_in_a, a_in_b = bp.reshape(ap.shape), ap.reshape(bp.shape)  # views, equal sizes

    def add(fdata: Array, buf: Array) -> None:
        np.add(fdata, buf if fdata.dtype.kind == "c" else buf.real, out=fdata)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT:
            return _NOTHING_3
        if want_a:
            if conj_a:  # b conj(g)
                np.multiply(b_in_a, np.conj(dz) if complex_ else dz, out=buf_a)
            elif complex_:  # g conj(b)
                np.conjugate(b_in_a, out=buf_a)
                np.multiply(buf_a, dz, out=buf_a)
            else:
                np.multiply(b_in_a, dz, out=buf_a)
            add(da, buf_a)
        if want_b:
            if complex_ and not conj_a:
                np.conjugate(a_in_b, out=buf_b)
                np.multiply(buf_b, dz, out=buf_b)
            else:
                np.multiply(a_in_b, dz, out=buf_b)
            add(db, buf_b)
        return _NOTHING_3

    return pullback, state


_NOTHING_3 = (NT, NT, NT)


def _scalar_product_pullback(a: CD, b: CD, conj_a: bool) -> Pullback:
    """Two scalars: no arrays at all."""
    ap, bp = a.primal, b.primal

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT:
            return NT, zero_for(a), zero_for(b)
        ga = bp * np.conj(dz) if conj_a else dz * np.conj(bp)
        gb = dz * ap if conj_a else dz * np.conj(ap)
        return NT, send(a, ga), send(b, gb)

    return pullback


def _is_scalar(x: object) -> bool:
    return not isinstance(x, np.ndarray)


# --------------------------------------------------------------------------------------------
# matmul, dot, vdot, inner, outer


def matmul_grads(a: Array, b: Array, g: t.Any, want_a: bool, want_b: bool) -> tuple[t.Any, t.Any]:
    """The gradients of ``a @ b`` for cotangent ``g``, before summing over broadcast axes."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = np.asarray(g)
    if a.ndim == 1:
        g2 = np.expand_dims(g2, -1 if b.ndim == 1 else -2)
    if b.ndim == 1:
        g2 = np.expand_dims(g2, -1)
    ga = gb = None
    if want_a:
        ga = g2 @ conj(_swap(b2))
        if a.ndim == 1:
            ga = ga[..., 0, :]
    if want_b:
        gb = conj(_swap(a2)) @ g2
        if b.ndim == 1:
            gb = gb[..., :, 0]
    return ga, gb


def matmul_rrule(state: Scratch | None, f: CD, a: CD, b: CD) -> StatefulResult:
    """The general rule: any shapes NumPy multiplies, broadcast batches, complex, mixed dtypes.
    Products of float64 matrices and vectors take variants (``products_f64``)."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    if _is_sum_of_products(z, ap, bp):
        pullback, state = sum_of_products(state, z, a, b, False)
        return CoDual(z, NT), pullback, state
    zf = new_fdata(z)

    def general(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        ga, gb = matmul_grads(ap, bp, g, needs(a), needs(b))
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), general, _keep(state)


for _fn in (np.matmul, operator.matmul):
    stateful_primitive(_fn, ARRAY, ARRAY, state_type=Scratch)(matmul_rrule)
frules.register_bilinear([np.matmul, operator.matmul])


def _tensordot_grads(
    a: Array, b: Array, g: t.Any, want_a: bool, want_b: bool
) -> tuple[t.Any, t.Any]:
    """``np.dot`` with ``b`` of three or more axes: ``z[I, J, m] = sum_k a[I, k] b[J, k, m]``."""
    p, q = a.ndim, b.ndim
    g = np.asarray(g)
    ga = gb = None
    if want_a:  # sum over J and m: the last (q - 1) axes of g
        b_axes = [*range(q - 2), q - 1]
        ga = np.tensordot(g, conj(b), axes=(list(range(p - 1, g.ndim)), b_axes))
    if want_b:  # sum over I; the result is (k, J..., m): move k before m
        gb = np.tensordot(conj(a), g, axes=(list(range(p - 1)), list(range(p - 1))))
        gb = np.moveaxis(gb, 0, -2)
    return ga, gb


def _scalar_times(g: t.Any, a: CD, b: CD) -> tuple[t.Any, t.Any]:
    """The gradients of a product by a scalar (one operand 0-d)."""
    ap, bp = a.primal, b.primal
    ga = tables.g_times_y(g, ap, bp, None) if needs(a) else None
    gb = tables.g_times_x(g, ap, bp, None) if needs(b) else None
    return ga, gb


def _product_shortcut(
    state: Scratch | None, z: t.Any, a: CD, b: CD, conjugate: bool, vectors_only: bool
) -> StatefulResult | None:
    """The result of a product of two scalars, or of two vectors to a scalar (summed in the
    state's buffers: it allocates nothing), if the call is one; else None."""
    ap, bp = a.primal, b.primal
    if _is_scalar(ap) and _is_scalar(bp):
        return CoDual(z, NT), _scalar_product_pullback(a, b, conjugate), _keep(state)
    if _is_sum_of_products(z, ap, bp) and (not vectors_only or (ap.ndim <= 1 and bp.ndim <= 1)):
        pullback, state = sum_of_products(state, z, a, b, conjugate)
        return CoDual(z, NT), pullback, state
    return None


def dot_rrule(state: Scratch | None, f: CD, a: CD, b: CD) -> StatefulResult:
    """``np.dot(a, b)`` and ``a.dot(b)``: a product by a scalar, a matrix product for ``b`` of
    at most two axes, else a sum over a's last and b's second-to-last axis."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    shortcut = _product_shortcut(state, z, a, b, False, True)
    if shortcut is not None:
        return shortcut
    zf = new_fdata(z)

    def general(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        if np.ndim(ap) == 0 or np.ndim(bp) == 0:
            ga, gb = _scalar_times(g, a, b)
        elif bp.ndim <= 2:
            ga, gb = matmul_grads(ap, bp, g, needs(a), needs(b))
        else:
            ga, gb = _tensordot_grads(ap, bp, g, needs(a), needs(b))
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), general, _keep(state)


def vdot_rrule(state: Scratch | None, f: CD, a: CD, b: CD) -> StatefulResult:
    """``np.vdot(a, b) = sum(conj(a) * b)`` over the flattened operands (equal sizes)."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    shortcut = _product_shortcut(state, z, a, b, True, False)
    if shortcut is not None:
        return shortcut
    # a scalar and a one-element array, or operands of other dtypes: numbers, not arrays
    a1 = ap.flat[0] if isinstance(ap, np.ndarray) else ap
    b1 = bp.flat[0] if isinstance(bp, np.ndarray) else bp

    def small(dz: t.Any) -> tuple[t.Any, ...]:
        if dz is NT or not (needs(a) or needs(b)):
            return NT, zero_for(a), zero_for(b)
        return NT, send(a, b1 * np.conj(dz)), send(b, dz * a1)

    return CoDual(z, new_fdata(z)), small, _keep(state)


def inner_rrule(state: Scratch | None, f: CD, a: CD, b: CD) -> StatefulResult:
    """``np.inner(a, b)``: ``z[I, J] = sum_k a[I, k] b[J, k]`` (a product for a scalar)."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    shortcut = _product_shortcut(state, z, a, b, False, True)
    if shortcut is not None:
        return shortcut
    zf = new_fdata(z)

    def general(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        ga = gb = None
        if np.ndim(ap) == 0 or np.ndim(bp) == 0:
            ga, gb = _scalar_times(g, a, b)
        else:
            i, j = ap.ndim - 1, bp.ndim - 1
            g = np.asarray(g)
            if needs(a):
                ga = np.tensordot(g, conj(bp), axes=(list(range(i, i + j)), list(range(j))))
            if needs(b):
                gb = np.tensordot(g, conj(ap), axes=(list(range(i)), list(range(i))))
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), general, _keep(state)


def outer_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``np.outer(a, b)`` of the flattened operands."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    zf = new_fdata(z)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        fa, fb = np.ravel(ap), np.ravel(bp)
        ga = (g @ conj(fb)).reshape(np.shape(ap)) if needs(a) else None
        gb = (conj(fa) @ g).reshape(np.shape(bp)) if needs(b) else None
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), pullback


for _x in NUMERIC:
    for _y in NUMERIC:
        stateful_primitive(np.dot, _x, _y, state_type=Scratch)(dot_rrule)
        stateful_primitive(np.vdot, _x, _y, state_type=Scratch)(vdot_rrule)
        stateful_primitive(np.inner, _x, _y, state_type=Scratch)(inner_rrule)
        primitive(np.outer, _x, _y)(outer_rrule)
    stateful_primitive(np.ndarray.dot, ARRAY, _x, state_type=Scratch)(dot_rrule)
frules.register_bilinear([np.dot, np.ndarray.dot, np.inner, np.outer])
frules.register_multilinear([np.vdot], 0, 1)


_CROSS_AXES = ("axisa", "axisb", "axisc", "axis")


def cross_rrule(f: CD, a: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None)`` of 3-vectors along those
    axes, broadcast: ``<g, a x b> = <b x g, a> = <g x a, b>``, so ``ga = conj(b) x g`` and
    ``gb = g x conj(a)`` (holomorphic and bilinear), each with its vector axis moved last and
    back.  2-vectors (which NumPy 2 deprecates) raise."""
    ap, bp = a.primal, b.primal
    axes = bind(_CROSS_AXES, args, kwargs, dict.fromkeys(_CROSS_AXES[:3], -1) | {"axis": None}, "cross")
    if axes["axis"] is not None:
        axes = dict.fromkeys(_CROSS_AXES[:3], axes["axis"])
    a3 = np.moveaxis(ap, t.cast(int, axes["axisa"]), -1)
    b3 = np.moveaxis(bp, t.cast(int, axes["axisb"]), -1)
    if np.shape(a3)[-1:] != (3,) or np.shape(b3)[-1:] != (3,):
        raise UnsupportedArgumentError("np.cross of 2-vectors: no rule (pad them with a zero)")
    z = f.primal(ap, bp, *(v.primal for v in args), **{k: v.primal for k, v in kwargs.items()})
    zf = new_fdata(z)

    def back(g3: Array, x3: Array, axis: object) -> Array:
        return np.moveaxis(unbroadcast(g3, np.shape(x3)), -1, t.cast(int, axis))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        rest = nothing(len(args) + len(kwargs))
        if g is None:
            return NT, zero_for(a), zero_for(b), *rest
        g3 = np.moveaxis(g, t.cast(int, axes["axisc"]), -1)
        ga = back(np.cross(conj(b3), g3), a3, axes["axisa"]) if needs(a) else None
        gb = back(np.cross(g3, conj(a3)), b3, axes["axisb"]) if needs(b) else None
        return NT, send(a, ga), send(b, gb), *rest

    return CoDual(z, zf), pullback


primitive(np.cross, ARRAY, ARRAY, ...)(cross_rrule)
frules.register_bilinear([np.cross], most=6, options=_CROSS_AXES)


# --------------------------------------------------------------------------------------------
# tensordot, einsum, kron


def _tensordot_axes(axes: object, a_ndim: int, b_ndim: int) -> tuple[list[int], list[int]]:
    """``tensordot``'s ``axes`` as two lists of paired, non-negative axes."""
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(a_ndim - n, a_ndim)), list(range(n))
    left, right = t.cast(tuple[t.Any, t.Any], axes)
    la = [int(left)] if isinstance(left, (int, np.integer)) else [int(i) for i in left]
    lb = [int(right)] if isinstance(right, (int, np.integer)) else [int(i) for i in right]
    return [i % a_ndim for i in la], [i % b_ndim for i in lb]


def tensordot_rrule(f: CD, a: CD, b: CD, *args: CD, **kwargs: CD) -> RuleResult:
    """``np.tensordot(a, b, axes)``: ``z[I, J] = sum_K a[I, K] b[K, J]`` with ``K`` the paired
    axes; each gradient is a tensordot of the cotangent with the other operand, transposed back
    into the operand's axis order."""
    bound = bind(("axes",), args, kwargs, {"axes": 2}, "tensordot")
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp, *(x.primal for x in args), **{k: v.primal for k, v in kwargs.items()})
    zf = new_fdata(z)
    sa, sb = _tensordot_axes(bound["axes"], np.ndim(ap), np.ndim(bp))
    free_a = [i for i in range(np.ndim(ap)) if i not in sa]
    free_b = [i for i in range(np.ndim(bp)) if i not in sb]
    rest = nothing(len(args) + len(kwargs))

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return (NT, zero_for(a), zero_for(b), *rest)
        g = np.asarray(g)
        na = len(free_a)
        ga = gb = None
        if needs(a):  # g[I, J] conj(b)[K, J] -> (I, K in b's order)
            ga = np.tensordot(g, conj(bp), axes=(list(range(na, g.ndim)), free_b))
            order = free_a + [sa[sb.index(j)] for j in sorted(sb)]
            ga = np.transpose(ga, np.argsort(order))
        if needs(b):  # conj(a)[I, K] g[I, J] -> (K in a's order, J)
            gb = np.tensordot(conj(ap), g, axes=(free_a, list(range(na))))
            order = [sb[sa.index(i)] for i in sorted(sa)] + free_b
            gb = np.transpose(gb, np.argsort(order))
        return (NT, send(a, ga), send(b, gb), *rest)

    return CoDual(z, zf), pullback


primitive(np.tensordot, ARRAY, ARRAY, ...)(tensordot_rrule)
frules.register_multilinear([np.tensordot], 0, 1)


def _einsum_subscripts(spec: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """The operands' and the output's subscripts, with ``...`` written out as letters and the
    implicit output (letters that occur once, sorted) made explicit."""
    spec = spec.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} subscripts for {len(shapes)} operands")
    used = set(spec)
    spare = [c for c in string.ascii_letters if c not in used]
    broadcast = max(
        (len(s) - len(term.replace("...", "")) for term, s in zip(terms, shapes) if "..." in term),
        default=0,
    )
    dots = "".join(spare[:broadcast])
    full = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            k = len(shape) - len(term.replace("...", ""))
            term = term.replace("...", dots[broadcast - k :] if k else "")
        full.append(term)
    if arrow:
        out = output.replace("...", dots)
    else:
        letters = "".join(full)
        once = sorted(c for c in set(letters) if letters.count(c) == 1 and c not in dots)
        out = dots + "".join(once)
    return full, out


def einsum_rrule(state: Scratch | None, f: CD, spec: CD, *ops: CD, **kwargs: CD) -> StatefulResult:
    """``np.einsum(subscripts, *operands)``: the gradient of each operand is itself an einsum
    of the cotangent with the other operands (conjugated), onto the operand's subscripts.  A
    letter only that operand has (summed over inside it) comes back as a broadcast axis; a
    repeated letter (a diagonal, ``"ii"``) is added into the diagonal of the fdata, a writable
    view made by einsum itself.  The gradients go through buffers of the state (``out=``), so
    a scalar result allocates nothing."""
    if "out" in kwargs:
        raise NotImplementedError("np.einsum with out=: no rule")
    if not isinstance(spec.primal, str):
        raise NotImplementedError("np.einsum with subscripts as lists: no rule")
    for o in ops:
        if not isinstance(o.primal, (np.ndarray, numbers.Number)):
            raise NotImplementedError(
                f"np.einsum of a {type(o.primal).__name__}: no rule; pass arrays (np.asarray)"
            )
    primals = [o.primal for o in ops]
    z = f.primal(spec.primal, *primals, **{k: v.primal for k, v in kwargs.items()})
    terms, out = _einsum_subscripts(spec.primal, [np.shape(p) for p in primals])
    if len(ops) == 1 and shares_memory(z, primals[0]):
        # a transpose or a diagonal, which einsum returns as a view: the same view of the fdata
        view = np.einsum(spec.primal, ops[0].fdata) if needs(ops[0]) else None
        zf = NT if view is None else view_fdata(z, writable(view), of=(primals[0], ops[0].fdata))
        rdata = nothing(3 + len(kwargs))
        return CoDual(z, zf), lambda dz: rdata, _keep(state)
    zf = new_fdata(z) if isinstance(z, np.ndarray) else NT
    dtype = np.result_type(z)
    # the size of each letter: the largest, as size-1 axes of ``...`` broadcast
    full: dict[str, int] = {}
    for term, p in zip(terms, primals):
        for c, n in zip(term, np.shape(p)):
            full[c] = max(full.get(c, 1), n)
    plans = []
    for i, term in enumerate(terms):
        unique = "".join(dict.fromkeys(term))
        elsewhere = set(out).union(*(terms[j] for j in range(len(terms)) if j != i))
        want = "".join(c for c in unique if c in elsewhere)
        shape = tuple(full[c] if c in want else 1 for c in unique)  # want's, with ones
        plans.append((term, unique, want, tuple(full[c] for c in want), shape))
    state = Scratch.fit(state, *((p[3], dtype) for p in plans))
    rest = nothing(len(kwargs))
    complex_ = dtype.kind == "c"

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        rdata: list[t.Any] = [NT, NT]
        for i, (op, (term, unique, want, _, shape)) in enumerate(zip(ops, plans)):
            if g is None or not needs(op):
                rdata.append(zero_for(op))
                continue
            # conj(einsum(conj(g), others)) = einsum(g, conj(others)), without copies
            others = [p for j, p in enumerate(primals) if j != i]
            subs = ",".join([out] + [terms[j] for j in range(len(terms)) if j != i])
            buf = state.arrays[i]
            np.einsum(f"{subs}->{want}", np.conj(g) if complex_ else g, *others, out=buf)
            if complex_:
                np.conjugate(buf, out=buf)
            grad = buf.reshape(shape)
            if isinstance(op.primal, np.ndarray) and grad.shape != op.primal.shape:
                grad = unbroadcast(grad, _diagonal_shape(op.primal, term, unique))
            if isinstance(op.primal, np.ndarray) and len(unique) < len(term):
                dx = op.fdata  # add onto the diagonal: einsum's own view of the fdata
                diagonal = np.einsum(f"{term}->{unique}", dx)
                np.add(diagonal, grad if dx.dtype.kind == "c" else grad.real, out=diagonal)
                rdata.append(NT)
            elif isinstance(op.primal, np.ndarray):
                dx = op.fdata
                np.add(dx, grad if dx.dtype.kind == "c" else grad.real, out=dx)
                rdata.append(NT)
            else:
                rdata.append(send(op, grad))
        return (*rdata, *rest)

    return CoDual(z, zf), pullback, state


def _diagonal_shape(x: Array, term: str, unique: str) -> tuple[int, ...]:
    """The shape of einsum's ``term -> unique`` view of ``x``."""
    sizes = dict(zip(term, x.shape))
    return tuple(sizes[c] for c in unique)


stateful_primitive(np.einsum, STR, ..., state_type=Scratch)(einsum_rrule)
frules.register_multilinear([np.einsum], 1)


def kron_rrule(f: CD, a: CD, b: CD) -> RuleResult:
    """``np.kron(a, b)``: ``z`` indexed by interleaved (a, b) index pairs, the operand of fewer
    axes padded with leading ones; each gradient sums the cotangent against the other."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    zf = new_fdata(z)
    nd = max(np.ndim(ap), np.ndim(bp))
    sa = (1,) * (nd - np.ndim(ap)) + np.shape(ap)
    sb = (1,) * (nd - np.ndim(bp)) + np.shape(bp)

    def pullback(dz: t.Any) -> tuple[t.Any, ...]:
        g = cotangent(zf, dz)
        if g is None:
            return NT, zero_for(a), zero_for(b)
        pairs = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])
        evens, odds = list(range(0, 2 * nd, 2)), list(range(1, 2 * nd, 2))
        ga = gb = None
        if needs(a):
            ga = np.tensordot(pairs, conj(np.reshape(bp, sb)), axes=(odds, list(range(nd))))
            ga = ga.reshape(np.shape(ap))
        if needs(b):
            gb = np.tensordot(conj(np.reshape(ap, sa)), pairs, axes=(list(range(nd)), evens))
            gb = gb.reshape(np.shape(bp))
        return NT, send(a, ga), send(b, gb)

    return CoDual(z, zf), pullback


primitive(np.kron, ARRAY, ARRAY)(kron_rrule)
primitive(np.kron, ARRAY, NUMBER)(kron_rrule)
primitive(np.kron, NUMBER, ARRAY)(kron_rrule)
frules.register_multilinear([np.kron], 0, 1)


# np.dot(A, B, out=C) of matrices is np.matmul(A, B, out=C): the same stateful rule.
for _dtype in FLOAT_DTYPES:
    _matrix = T.Array(_dtype, 2)
    stateful_primitive(
        np.dot, _matrix, _matrix, kwargs={"out": _matrix}, state_type=MatmulState
    )(matmul_out)
    stateful_primitive(np.dot, _matrix, _matrix, _matrix, state_type=MatmulState)(matmul_out)
