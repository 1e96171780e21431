"""Float64 variants of the products: ``A @ B`` (``matmul_f64``), ``A @ v`` (``matvec_f64``)
and ``v @ A`` (``vecmat_f64``), chosen by the operands' static types for ``operator.matmul``,
``np.matmul``, ``np.dot`` and ``ndarray.dot`` (which for these ranks are ``matmul``); the
general rules are ``products``' (imported first, so they exist before their variants).

Each variant is a stateful rule (what a site calls where the build does not write the form)
with an array form (``gibbous.rules.inline``): the reverse program calls the variant's
adjoint, the rule's pullback without the closure, on what the forward block saved.  No
broadcasting and no conjugates to handle: the static types say float64 of these ranks.
"""

from __future__ import annotations

import functools
import operator
import typing as t

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.rules import outer_sums
from gibbous.tangents import pool
from gibbous.rules.buffers import SiteBuffers, scratch
from gibbous.rules.inline import WANT, InlineRule, Save, called_form
from gibbous.rules.outer_sums import OuterSums
from gibbous.library.common import CD, NT, Array, Scratch, new_fdata
from gibbous.library.linalg.products import _NOTHING_3, StatefulResult, _keep
from gibbous.rules.registry import stateful_primitive
from gibbous.tangents.model import CoDual

# --------------------------------------------------------------------------------------------
# The stateful rules


def matmul_f64_rrule(state: Scratch | None, f: CD, a: CD, b: CD) -> StatefulResult:
    """``A @ B`` of float64 matrices (the static types say so): no broadcasting, no conjugates.
    The products go into the state's buffers before they are added into the fdata: a warm
    reverse allocates nothing."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    da, db = a.fdata, b.fdata
    want_a, want_b = type(da) is np.ndarray, type(db) is np.ndarray  # inactive: no fdata
    # An operand without a gradient (data) gets no buffer.
    f64 = ap.dtype
    state = Scratch.fit(
        state, (ap.shape if want_a else (0,), f64), (bp.shape if want_b else (0,), f64)
    )
    buf_a, buf_b = state.arrays
    zf = new_fdata(z)
    done = False

    def matrices_pullback(dz: t.Any) -> tuple[t.Any, ...]:
        nonlocal done
        if want_a:
            np.matmul(zf, bp.T, out=buf_a)
            np.add(da, buf_a, out=da)
        if want_b:
            np.matmul(ap.T, zf, out=buf_b)
            np.add(db, buf_b, out=db)
        if not done:  # the result's fdata is consumed: recycled (gibbous.tangents.pool)
            done = True
            pool.release(zf)
        return _NOTHING_3

    return CoDual(z, zf), matrices_pullback, state


def matvec_f64_rrule(state: Scratch | None, f: CD, a: CD, b: CD) -> StatefulResult:
    """``A @ v`` of a float64 matrix and vector (the static types say so)."""
    return _adjoint_rule(matvec_f64_adjoint, state, f, a, b)


def vecmat_f64_rrule(state: Scratch | None, f: CD, a: CD, b: CD) -> StatefulResult:
    """``v @ A`` of a float64 vector and matrix (the static types say so)."""
    return _adjoint_rule(vecmat_f64_adjoint, state, f, a, b)


def _adjoint_rule(
    adjoint: t.Callable[..., tuple[t.Any, ...]], state: Scratch | None, f: CD, a: CD, b: CD
) -> StatefulResult:
    """A product with a vector: its pullback is the form's adjoint on the operands' fdata (a
    rule's fdata is never ``WANT``; an inactive operand's is no array: nothing for it)."""
    ap, bp = a.primal, b.primal
    z = f.primal(ap, bp)
    zf = new_fdata(z)
    da, db = a.fdata, b.fdata

    def vector_pullback(dz: t.Any) -> tuple[t.Any, ...]:
        adjoint(ap, da, bp, db, zf)
        return _NOTHING_3

    return CoDual(z, zf), vector_pullback, _keep(state)


# --------------------------------------------------------------------------------------------
# Array forms of the float64 variants: the AD pass writes ``A @ B`` into the forward program and
# the reverse program calls the adjoint below on what the block saved, instead of a call of the
# stateful rule (a CoDual, a pullback closure and a tape entry per product).  The numbers are
# the rule's: the same products, added into the fdata the same way.

_PRODUCT_SAVES = (
    ("primal", 0), ("fdata", 0), ("primal", 1), ("fdata", 1), ("result_fdata", -1), ("site", -1),
)  # fmt: skip


def _add_product(
    acc: Array, product: np.ufunc, x: Array, y: Array, site: SiteBuffers | None, k: int
) -> None:
    """``acc += product(x, y)`` (``np.matmul``, or ``np.multiply`` for an outer product), the
    product computed whole first, as the rule does, so the same bits: into the form's site's
    scratch ``k`` (``gibbous.rules.buffers``).  Called by a rule (no site), a small product is
    new memory and a large one goes through scratch memory borrowed from the pool
    (``pool.empty``), not new memory that faults on first touch: what the rule's ``Scratch``
    buffer is for, without a state (docs/decisions.md)."""
    if site is not None:
        buf = product(x, y, out=scratch(site, k, acc.shape))
        np.add(acc, buf, out=acc)
        return
    if acc.nbytes < pool.LARGE_BYTES:
        np.add(acc, product(x, y), out=acc)
        return
    buf = pool.empty(acc.shape, acc.dtype, acc.nbytes)
    product(x, y, out=buf)
    np.add(acc, buf, out=acc)
    pool.release(buf)


def matmul_f64_adjoint(
    a: Array, da: t.Any, b: Array, db: t.Any, g: Array, site: SiteBuffers | None = None
) -> tuple[t.Any, ...]:
    """The reverse of ``z = A @ B`` (float64 matrices): ``g B^T`` into A's fdata, ``A^T g``
    into B's; an operand without array fdata (inactive: data) costs nothing; one whose fdata
    is ``WANT`` gets its cotangent as a value (``gibbous.rules.inline``)."""
    ra: t.Any = NT
    rb: t.Any = NT
    if type(da) is np.ndarray:
        _add_product(da, np.matmul, g, b.T, site, 0)
    elif da is WANT:
        ra = np.matmul(g, b.T, out=_out(site, 0, a.shape))
    if type(db) is np.ndarray:
        _add_product(db, np.matmul, a.T, g, site, 1)
    elif db is WANT:
        rb = np.matmul(a.T, g, out=_out(site, 1, b.shape))
    return ra, rb


def matvec_f64_adjoint(
    a: Array, da: t.Any, v: Array, dv: t.Any, g: Array, site: SiteBuffers | None = None
) -> tuple[t.Any, ...]:
    """The reverse of ``z = A @ v`` (a float64 matrix and vector): the outer product ``g v^T``
    into A's fdata, ``g A`` into v's."""
    ra: t.Any = NT
    rv: t.Any = NT
    if type(da) is np.ndarray:
        _add_product(da, np.multiply, g[:, None], v, site, 0)
    elif da is WANT:
        ra = np.multiply(g[:, None], v, out=_out(site, 0, a.shape))
    if type(dv) is np.ndarray:
        np.add(dv, np.matmul(g, a, out=_out(site, 1, v.shape)), out=dv)
    elif dv is WANT:
        rv = np.matmul(g, a, out=_out(site, 1, v.shape))
    return ra, rv


def vecmat_f64_adjoint(
    v: Array, dv: t.Any, a: Array, da: t.Any, g: Array, site: SiteBuffers | None = None
) -> tuple[t.Any, ...]:
    """The reverse of ``z = v @ A`` (a float64 vector and matrix): ``A g`` (``g A^T``) into
    v's fdata, the outer product ``v g^T`` into A's."""
    rv: t.Any = NT
    ra: t.Any = NT
    if type(dv) is np.ndarray:
        np.add(dv, np.matmul(a, g, out=_out(site, 0, v.shape)), out=dv)
    elif dv is WANT:
        rv = np.matmul(a, g, out=_out(site, 0, v.shape))
    if type(da) is np.ndarray:
        _add_product(da, np.multiply, v[:, None], g, site, 1)
    elif da is WANT:
        ra = np.multiply(v[:, None], g, out=_out(site, 1, a.shape))
    return rv, ra


def matvec_f64_deferred(
    a: Array, da: t.Any, v: Array, dv: t.Any, g: Array, site: SiteBuffers, sums: OuterSums
) -> tuple[t.Any, ...]:
    """``matvec_f64_adjoint`` with the outer product ``g vᵀ`` into A's fdata deferred to the
    end of the reverse pass (``gibbous.rules.outer_sums``)."""
    if type(da) is np.ndarray:
        outer_sums.add(sums, da, g, v)
        da = NT
    return matvec_f64_adjoint(a, da, v, dv, g, site)


def vecmat_f64_deferred(
    v: Array, dv: t.Any, a: Array, da: t.Any, g: Array, site: SiteBuffers, sums: OuterSums
) -> tuple[t.Any, ...]:
    """``vecmat_f64_adjoint`` with the outer product ``v gᵀ`` into A's fdata deferred."""
    if type(da) is np.ndarray:
        outer_sums.add(sums, da, v, g)
        da = NT
    return vecmat_f64_adjoint(v, dv, a, da, g, site)


def _out(site: SiteBuffers | None, k: int, shape: tuple[int, ...]) -> Array | None:
    """Where a product goes: the site's scratch ``k``, or new memory (None) without a site."""
    return None if site is None else scratch(site, k, shape)


def _product_form(
    name: str, adjoint: t.Callable[..., tuple[t.Any, ...]], saves: tuple[Save, ...] = _PRODUCT_SAVES
) -> InlineRule:
    runtime.register_object(adjoint, adjoint.__name__)  # a path for the IR's text
    return called_form(name, adjoint, saves, (False, False), values=True)


def _deferring(form: InlineRule, matrix: int, adjoint: t.Callable[..., t.Any]) -> InlineRule:
    """``form``, able to defer its matrix operand's outer products (``InlineRule.deferred``)."""
    later = _product_form(form.name, adjoint, (*_PRODUCT_SAVES, ("sums", -1)))
    return attrs.evolve(form, deferred=(matrix, later))


MATMUL_F64_FORM = _product_form("matmul", matmul_f64_adjoint)
MATVEC_F64_FORM = _deferring(_product_form("matvec", matvec_f64_adjoint), 0, matvec_f64_deferred)
VECMAT_F64_FORM = _deferring(_product_form("vecmat", vecmat_f64_adjoint), 1, vecmat_f64_deferred)

_MATRIX, _VECTOR = T.Array("float64", 2), T.Array("float64", 1)
# ``np.dot`` of a matrix and a matrix or vector, either way round, is ``matmul`` (its other
# ranks are not: those and ``out=`` keep ``products``' rules, whose patterns these are within).
for _fn in (np.matmul, operator.matmul, np.dot, np.ndarray.dot):
    _variant = functools.partial(stateful_primitive, _fn, state_type=Scratch)
    _variant(_MATRIX, _MATRIX, variant="matmul_f64", inline=MATMUL_F64_FORM)(matmul_f64_rrule)
    _variant(_MATRIX, _VECTOR, variant="matvec_f64", inline=MATVEC_F64_FORM)(matvec_f64_rrule)
    _variant(_VECTOR, _MATRIX, variant="vecmat_f64", inline=VECMAT_F64_FORM)(vecmat_f64_rrule)
