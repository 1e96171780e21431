"""matmul (@), dot, inner, outer, np.linalg.norm: every combination of 1-D, 2-D and batched;
vdot, tensordot, einsum, kron, diagonals, traces and the decompositions (the audit's cases in
gibbous/audit/cases/linalg.py test every rule at representative arguments; these tests add
programs, edge cases and errors)."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

from tests.library.harness import (
    call,
    check,
    check_call,
    check_like_float64,
    gradient,
    shape_of,
)

MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
]  # fmt: skip


@pytest.mark.parametrize("fn", [np.matmul, operator.matmul], ids=["np.matmul", "operator.matmul"])
@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES, ids=str)
def test_matmul(fn: t.Any, sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    check_call(fn, rng.standard_normal(sa), rng.standard_normal(sb), rng=rng)


@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (3,))], ids=str)
def test_matmul_complex_and_float32(sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    def c(shape: t.Any) -> t.Any:
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    check_call(np.matmul, c(sa), c(sb), rng=rng)
    check_call(np.matmul, c(sa), rng.standard_normal(sb), rng=rng)  # real times complex
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    check_like_float64(call(np.matmul), a, b)


DOT_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
              ((2, 3), (4, 3, 5)), ((2, 2, 3), (4, 3, 5)), ((3,), (4, 3, 2)), ((), (2, 3)),
              ((2, 3), ())]  # fmt: skip


@pytest.mark.parametrize("sa, sb", DOT_SHAPES, ids=str)
def test_dot(sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    check_call(np.dot, a, b, rng=rng)
    if sa:
        check_call(np.ndarray.dot, a, b, rng=rng)


def test_dot_of_scalars_and_complex(rng: np.random.Generator) -> None:
    check_call(np.dot, 1.5, rng.standard_normal(3), rng=rng)
    check_call(np.dot, 1.5, -0.5, rng=rng)
    z = rng.standard_normal((2, 3)) + 1j
    check_call(np.dot, z, rng.standard_normal((4, 3, 5)) - 0.5j, rng=rng)


INNER_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (4, 3)), ((2, 3), (4, 3)), ((2, 5, 3), (4, 3)),
                ((), (3,)), ((2, 3), ())]  # fmt: skip


@pytest.mark.parametrize("sa, sb", INNER_SHAPES, ids=str)
def test_inner(sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    check_call(np.inner, rng.standard_normal(sa), rng.standard_normal(sb), rng=rng)


@pytest.mark.parametrize(
    "sa, sb", [((3,), (4,)), ((2, 3), (4,)), ((3,), ()), ((2, 2), (3, 1))], ids=str
)
def test_outer(sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    check_call(np.outer, rng.standard_normal(sa), rng.standard_normal(sb), rng=rng)
    z = rng.standard_normal(sa) + 1j
    check_call(np.outer, z, rng.standard_normal(sb), rng=rng)


@pytest.mark.parametrize(
    "shape, options",
    [((4,), {}), ((3, 4), {}), ((3, 4), {"axis": 1}), ((3, 4), {"axis": 0, "keepdims": True}),
     ((2, 3, 4), {}), ((3,), {"ord": 2}), ((3, 4), {"ord": "fro"})],
)  # fmt: skip
def test_norm(shape: t.Any, options: dict[str, t.Any], rng: np.random.Generator) -> None:
    check(call(np.linalg.norm, **options), rng.standard_normal(shape), rng=rng)
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    check(call(np.linalg.norm, **options), z, rng=rng)


def test_norm_at_zero_and_of_every_order(rng: np.random.Generator) -> None:
    (g,) = gradient(call(np.linalg.norm), np.zeros(3))
    np.testing.assert_array_equal(g, 0.0)
    x = np.array([0.5, -2.0, 1.0])
    (g,) = gradient(call(np.linalg.norm, ord=np.inf), x)
    np.testing.assert_array_equal(g, [0.0, -1.0, 0.0])
    (g,) = gradient(call(np.linalg.norm, ord=1), x)
    np.testing.assert_array_equal(g, [1.0, -1.0, 1.0])
    for order in (1, 3, 0.5, np.inf, -np.inf):
        check(call(np.linalg.norm, ord=order), rng.uniform(0.5, 1.5, 4) * [1, -1, 1, -1], rng=rng)
    for order in ("fro", "nuc", 1, -1, np.inf, -np.inf, 2, -2):
        check(call(np.linalg.norm, ord=order), rng.standard_normal((3, 4)), rng=rng)


MATRIX_ORDERS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("order", MATRIX_ORDERS, ids=str)
@pytest.mark.parametrize(
    "shape, axis",
    [((3, 4), None), ((4, 3), (0, 1)), ((3, 4), (1, 0)), ((2, 3, 4), (-2, -1)),
     ((3, 2, 4), (0, 2)), ((2, 2, 3, 3), (-1, -2))],
)  # fmt: skip
def test_matrix_norms(
    order: t.Any, shape: t.Any, axis: t.Any, rng: np.random.Generator
) -> None:
    """Every matrix order, of one matrix and of stacks along any two axes, keepdims or not,
    real and complex (``ord=None`` with two axes is the Frobenius norm)."""
    if axis is None and len(shape) != 2:
        return
    for keepdims in (False, True):
        options = {"ord": order, "axis": axis, "keepdims": keepdims}
        x = rng.standard_normal(shape)
        check(call(np.linalg.norm, **options), x, rng=rng)
        check(call(np.linalg.norm, **options), x + 1j * rng.standard_normal(shape), rng=rng)


def test_diagonal_fdata_is_a_view_of_the_parents() -> None:
    """A write into the diagonal's fdata (a later rule's gradient) lands in the matrix's."""
    from gibbous.ir.types import typeof
    from gibbous.rules.registry import DefaultContext, build_primitive_rrule
    from gibbous.tangents.model import zero_coduals

    a = np.arange(12.0).reshape(3, 4)
    for fn, args in ((np.diagonal, (1,)), (np.diag, ()), (np.ndarray.diagonal, (-1,))):
        f, ca, *cargs = zero_coduals(fn, a, *args)
        rule = build_primitive_rrule(DefaultContext, fn, [typeof(a), *map(typeof, args)])
        y, pullback = rule(f, ca, *cargs)
        assert not y.primal.flags.writeable and y.fdata.flags.writeable
        y.fdata[...] += 1.0
        assert np.shares_memory(y.fdata, ca.fdata) and ca.fdata.sum() == y.primal.size
        pullback(None)
        assert ca.fdata.sum() == y.primal.size  # the pullback adds nothing more


def test_diagonal_in_a_program(rng: np.random.Generator) -> None:
    def program(tape: t.Any, a: t.Any) -> t.Any:
        d = tape.call(np.diagonal, a)
        return tape.call(np.sum, tape.call(operator.mul, d, d))

    check(program, rng.standard_normal((3, 3)), rng=rng)
    check(call(np.trace, 1), rng.standard_normal((3, 4)), rng=rng)
    check(call(np.trace, axis1=0, axis2=2), rng.standard_normal((3, 2, 3)), rng=rng)


@pytest.mark.parametrize(
    "spec, shapes",
    [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->", [(2, 3)]),
     ("i,j->ij", [(2,), (3,)]), ("...i,...i->...", [(2, 3), (2, 3)]), ("ij,j", [(2, 3), (3,)]),
     ("iij->j", [(2, 2, 3)]), ("ji", [(2, 3)]), ("...i,...i->...i", [(2, 3), (1, 3)]),
     ("...ij,...jk", [(2, 1, 2, 3), (4, 3, 2)])],
)  # fmt: skip
def test_einsum(spec: str, shapes: t.Any, rng: np.random.Generator) -> None:
    check_call(np.einsum, spec, *(rng.standard_normal(s) for s in shapes), rng=rng)


def test_einsum_gradient_against_matmul(rng: np.random.Generator) -> None:
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    seed = rng.standard_normal((2, 4))
    ga, gb = gradient(call(np.einsum), "ij,jk->ik", a, b, seed=seed)[1:]
    np.testing.assert_allclose(ga, seed @ b.T)
    np.testing.assert_allclose(gb, a.T @ seed)


@pytest.mark.parametrize(
    "sa, sb, axes",
    [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 2), ([0, 1], [1, 0])), ((3,), (3,), 0),
     ((2, 3, 4), (4, 2), ((2, 0), (0, 1)))],
)  # fmt: skip
def test_tensordot(sa: t.Any, sb: t.Any, axes: t.Any, rng: np.random.Generator) -> None:
    check(call(np.tensordot, axes=axes), rng.standard_normal(sa), rng.standard_normal(sb), rng=rng)


@pytest.mark.parametrize("sa, sb", [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 1, 2), (3,))], ids=str)
def test_kron_and_vdot(sa: t.Any, sb: t.Any, rng: np.random.Generator) -> None:
    check_call(np.kron, rng.standard_normal(sa), rng.standard_normal(sb), rng=rng)
    a = rng.standard_normal(sa) + 1j * rng.standard_normal(sa)
    check_call(np.vdot, a, rng.standard_normal(sa) - 0.5j, rng=rng)


def _spd(rng: np.random.Generator, n: int) -> t.Any:
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def test_decompositions_in_programs(rng: np.random.Generator) -> None:
    a = _spd(rng, 3)

    def chol_logdet(tape: t.Any, a: t.Any) -> t.Any:
        low = tape.call(np.linalg.cholesky, a)
        return tape.call(np.sum, tape.call(np.log, tape.call(np.diagonal, low)))

    check(chol_logdet, a, rng=rng)
    check(call(np.linalg.inv), a + rng.standard_normal((3, 3)) * 0.1, rng=rng)
    check(call(np.linalg.solve), a, rng.standard_normal(3), rng=rng)
    check(call(np.linalg.det), a, rng=rng)
    check(call(np.linalg.svd, full_matrices=False), rng.standard_normal((4, 3)), rng=rng)
    check(call(np.linalg.qr), rng.standard_normal((4, 3)), rng=rng)
    check(call(np.linalg.eigh), a, rng=rng)
    check(call(np.linalg.pinv), rng.standard_normal((3, 4)), rng=rng)


def test_decompositions_read_the_lower_triangle_only(rng: np.random.Generator) -> None:
    a = _spd(rng, 3)
    (g,) = gradient(call(np.linalg.cholesky), a, seed=rng.standard_normal((3, 3)))
    assert np.all(np.triu(g, 1) == 0)


def test_unsupported_decompositions_raise(rng: np.random.Generator) -> None:
    tall = rng.standard_normal((4, 3))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        gradient(call(np.linalg.svd), tall, seed=None)
    with pytest.raises(NotImplementedError, match="full_matrices"):
        gradient(call(np.linalg.svd), tall + 1j, seed=None)
    with pytest.raises(NotImplementedError, match="hermitian"):
        gradient(call(np.linalg.svd, hermitian=True), np.eye(2), seed=None)
    with pytest.raises(NotImplementedError, match="fewer rows"):
        gradient(call(np.linalg.qr), tall.T + 1j, seed=None)
    with pytest.raises(NotImplementedError, match="fewer rows"):
        gradient(call(np.linalg.qr), tall.T, seed=None)
    with pytest.raises(NotImplementedError, match="mode"):
        gradient(call(np.linalg.qr, mode="complete"), tall, seed=None)


def test_complex_eigh_for_losses_blind_to_phases(rng: np.random.Generator) -> None:
    m = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    a = m @ m.conj().T + 3 * np.eye(3)
    weights = rng.standard_normal((3, 3))

    def program(tape: t.Any, a: t.Any) -> t.Any:
        pair = tape.call(np.linalg.eigh, a)
        values = tape.call(operator.getitem, pair, 0)
        vectors = tape.call(operator.getitem, pair, 1)
        magnitudes = tape.call(np.abs, vectors)  # |V|: the phases drop out
        squares = tape.call(operator.mul, magnitudes, magnitudes)
        weighted = tape.call(operator.mul, squares, weights)
        return tape.call(operator.add, tape.call(np.sum, weighted), tape.call(np.sum, values))

    check(program, a, rng=rng)


def _c(rng: np.random.Generator, *shape: int) -> t.Any:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (5, 2), (2, 4, 3)], ids=str)
def test_complex_qr(shape: t.Any, rng: np.random.Generator) -> None:
    """LAPACK gives R a real diagonal, which fixes the factors: random cotangents of both."""
    a = _c(rng, *shape)
    assert np.all(np.imag(np.diagonal(np.linalg.qr(a).R, 0, -2, -1)) == 0)
    check_call(np.linalg.qr, a, rng=rng)
    check(call(np.linalg.qr, "reduced"), a, rng=rng)


def _svd_loss(kind: str, full: bool) -> t.Any:
    """A program of ``svd``: losses that do not depend on the phases ``u_i`` and ``v_i``
    share."""

    def program(tape: t.Any, a: t.Any) -> t.Any:
        triple = tape.call(np.linalg.svd, a, full_matrices=full)
        u, s, vh = (tape.call(operator.getitem, triple, i) for i in range(3))
        if kind == "s":
            return tape.call(np.sum, tape.call(operator.mul, s, s))
        if kind == "|U|, |Vh|":
            parts = []
            for x in (u, vh):
                m = tape.call(np.abs, x)
                shape = shape_of(m)
                weights = tape.const(np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape))
                squares = tape.call(operator.mul, m, m)
                parts.append(tape.call(np.sum, tape.call(operator.mul, squares, weights)))
            return tape.call(operator.add, *parts)
        # U diag(s^2) Vh over the k = min(m, n) singular pairs
        k = shape_of(s)[-1]
        uk = tape.call(operator.getitem, u, (Ellipsis, slice(None), slice(0, k)))
        vk = tape.call(operator.getitem, vh, (Ellipsis, slice(0, k), slice(None)))
        s2 = tape.call(operator.mul, s, s)
        row = tape.call(operator.getitem, s2, (Ellipsis, None, slice(None)))
        product = tape.call(operator.matmul, tape.call(operator.mul, uk, row), vk)
        return tape.call(np.sum, tape.call(np.real, tape.call(operator.mul, product, product)))

    return program


@pytest.mark.parametrize("kind", ["s", "|U|, |Vh|", "U diag(s^2) Vh"])
@pytest.mark.parametrize(
    "shape, full", [((4, 3), False), ((3, 4), False), ((3, 3), True), ((2, 4, 3), False)], ids=str
)
def test_complex_svd_for_losses_blind_to_phases(
    kind: str, shape: t.Any, full: bool, rng: np.random.Generator
) -> None:
    check(_svd_loss(kind, full), _c(rng, *shape), rng=rng)
    check(_svd_loss(kind, full), rng.standard_normal(shape), rng=rng)  # real: every loss


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)], ids=str)
def test_complex_singular_values(shape: t.Any, rng: np.random.Generator) -> None:
    check(call(np.linalg.svd, compute_uv=False), _c(rng, *shape), rng=rng)
    check(call(np.linalg.svd, False, False), _c(rng, *shape), rng=rng)


def test_complex_svd_splits_a_phase_change_evenly(rng: np.random.Generator) -> None:
    """A loss that depends on the phases gets the gradient of the documented split: turning
    the phase of ``u_i v_i^H`` by ``t`` turns ``u_i`` by ``t/2`` and ``v_i`` by ``-t/2``.
    Here ``L = Im(u_00)``: the direction ``i u_0 v_0^H`` (which turns ``u_0 v_0^H`` by
    ``1 / s_0``) moves ``u_00`` by ``i u_00 / (2 s_0)``."""
    a = _c(rng, 3, 3)
    u, s, vh = np.linalg.svd(a)

    def program(tape: t.Any, a: t.Any) -> t.Any:
        first = tape.call(operator.getitem, tape.call(np.linalg.svd, a), 0)
        return tape.call(np.imag, tape.call(operator.getitem, first, (0, 0)))

    (g,) = gradient(program, a)
    direction = 1j * np.outer(u[:, 0], vh[0])
    claimed = float(np.real(np.vdot(g, direction)))
    np.testing.assert_allclose(claimed, np.real(u[0, 0]) / (2 * s[0]), rtol=1e-8)


@pytest.mark.parametrize(
    "a",
    [
        np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),  # rank 2
        np.array([[1.0, 2.0], [2.0, 4.0]]),  # rank 1
        np.zeros((3, 3)),  # rank 0: the adjugate of a 3x3 zero matrix is zero
        np.stack([np.eye(3), np.ones((3, 3))]),  # a stack with one singular matrix
    ],
)
def test_det_of_a_singular_matrix_has_its_adjugate_as_gradient(a: np.ndarray) -> None:
    """At ``det(A) = 0`` the inverse is inf or nan; the gradient (the adjugate, transposed)
    is finite, and the rule gives it."""
    import gibbous

    rule = gibbous.build_rrule(np.linalg.det, a)
    grad = gibbous.value_and_pullback(rule, np.ones(a.shape[:-2]) if a.ndim > 2 else 1.0,
                                      np.linalg.det, a)[1][1]
    h = 1e-6
    fd = np.zeros_like(a)
    for index in np.ndindex(*a.shape):
        e = np.zeros_like(a)
        e[index] = h
        fd[index] = np.sum(np.linalg.det(a + e) - np.linalg.det(a - e)) / (2 * h)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, fd, atol=1e-7)
    gibbous.testing.test_rule(np.linalg.det, a)


def test_cross_in_both_modes(rng: np.random.Generator) -> None:
    """``np.cross`` inside a program (GradBench's bundle adjustment rotates with it): the
    gradient, the jvp and the Hessian-vector product against central differences."""
    import gibbous

    b = rng.standard_normal(3)

    def f(a: np.ndarray) -> float:
        return float(np.sum(np.sin(np.cross(a, b)) * np.cross(b, a[0])))

    a, v = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    h = 1e-6
    fd = (f(a + h * v) - f(a - h * v)) / (2 * h)
    g = gibbous.grad(f)(a)
    assert float(np.sum(g * v)) == pytest.approx(fd, rel=1e-7, abs=1e-9)
    rule = gibbous.build_frule(f, a)
    assert gibbous.jvp(rule, f, (a,), (v,))[1] == pytest.approx(fd, rel=1e-7, abs=1e-9)
    fd_hv = (gibbous.grad(f)(a + h * v) - gibbous.grad(f)(a - h * v)) / (2 * h)
    np.testing.assert_allclose(gibbous.hvp(f, a, v), fd_hv, rtol=1e-6, atol=1e-8)

