"""matmul (@), dot, inner, outer, np.linalg.norm: every combination of 1-D, 2-D and batched."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

from tests.rules.prims.harness import call, check, check_call, check_like_float64, gradient

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


def test_norm_at_zero_and_unsupported_orders() -> None:
    (g,) = gradient(call(np.linalg.norm), np.zeros(3))
    np.testing.assert_array_equal(g, 0.0)
    with pytest.raises(NotImplementedError):
        gradient(call(np.linalg.norm, ord=1), np.ones(3))
