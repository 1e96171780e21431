"""examples/square_to_mul.py: its IR-text fixtures, and its claims checked against NumPy."""

from __future__ import annotations

import itertools
import pathlib
import typing as t

import numpy as np
import pytest

import gibbous
from examples.square_to_mul import (
    FLOAT_DTYPES,
    INT_DTYPES,
    SQUARING_CALLEES,
    SquareToMul,
    energy,
    squared_operand,
)
from gibbous.inspect import code_ir
from gibbous.ir.core import Call, Constant, Function
from gibbous.ir.types import typeof
from gibbous.ir.verify import verify
from tests.passes import test_fixtures as standard

FIXTURES = sorted((pathlib.Path(__file__).parent / "fixtures" / "square_to_mul").glob("*.ir"))


# The fixture format and checks are the standard passes' own (tests/passes/test_fixtures.py);
# importing examples.square_to_mul registered "square-to-mul" for their pipelines.
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture(path: pathlib.Path) -> None:
    standard.test_fixture(path)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_expected_output_is_a_fixed_point(path: pathlib.Path) -> None:
    standard.test_expected_output_is_a_fixed_point(path)


def test_fixtures_cover_firing_and_not_firing() -> None:
    names = {p.stem for p in FIXTURES}
    assert {"fires_on_arrays", "must_not_fire"} <= names
    assert all("square-to-mul" in standard.load(p).pipeline for p in FIXTURES)


# -- the claims: where the pass fires, x ** 2 and x * x are the same bits


def _sample(dtype: str) -> np.ndarray[t.Any, t.Any]:
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind not in "iufc":  # bool, object: the pass must not fire on them
        return np.array([False, True, 2.5, -1e200], dtype=object).astype(dtype)
    if dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        edges = [info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max]
        edges = [e for e in edges if info.min <= e <= info.max]
        values = rng.integers(info.min, info.max, size=20_000, dtype=dtype, endpoint=True)
        return np.concatenate([np.array(edges, dtype=dtype), values])
    finfo = np.finfo(dtype)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, finfo.tiny, finfo.smallest_subnormal,
                finfo.max, -finfo.max, np.sqrt(finfo.max), 1.0, -1.0]
    scales = rng.choice([1e-20, 1e-3, 1.0, 1e3, 1e20], size=50_000)
    with np.errstate(over="ignore"):
        values = (rng.standard_normal(50_000) * scales).astype(dtype)
    return np.concatenate([np.array(specials, dtype=dtype), values])


def _fires(callee: object, dtype: str, exponent: object) -> bool:
    f = Function("probe")
    x = f.entry.add_arg(typeof(np.zeros(1, dtype)), "x")
    call = Call(Constant(callee), [x, Constant(exponent)])
    return squared_operand(call) is x


CANDIDATES = list(
    itertools.product(
        SQUARING_CALLEES,
        sorted(FLOAT_DTYPES | INT_DTYPES | {"bool", "complex128", "longdouble", "object"}),
        [2, 2.0, 3, True, np.float64(2.0), np.int64(2)],
    )
)


@pytest.mark.parametrize("callee, dtype, exponent", CANDIDATES)
def test_fires_only_where_the_result_is_bit_identical(
    callee: t.Callable[[object, object], object], dtype: str, exponent: object
) -> None:
    if not _fires(callee, dtype, exponent):
        return
    x = _sample(dtype)
    with np.errstate(all="ignore"):
        power = np.asarray(callee(x, exponent))
        product = x * x
    assert power.dtype == product.dtype, "the rewrite would change the result's dtype"
    assert power.tobytes() == product.tobytes(), f"{callee}(x, {exponent!r}) on {dtype} differs"


def test_what_fires() -> None:
    fires = {(getattr(c, "__name__", c), d, repr(e)) for c, d, e in CANDIDATES if _fires(c, d, e)}
    assert ("pow", "float32", "2.0") in fires and ("power", "uint8", "2") in fires
    assert not any(d in ("bool", "complex128", "longdouble", "object") for _, d, _ in fires)
    assert not any(e not in ("2", "2.0") for _, _, e in fires)
    assert not any(d in INT_DTYPES and e == "2.0" for _, d, e in fires)


def test_why_float_scalars_are_left_alone() -> None:
    with pytest.raises(OverflowError):
        _ = 1e200**2
    assert 1e200 * 1e200 == float("inf")


def test_why_complex_arrays_are_left_alone() -> None:
    # NumPy's complex power and multiply kernels round differently (measured on NumPy 2.4).
    rng = np.random.default_rng(1)
    z = rng.standard_normal(10_000) + 1j * rng.standard_normal(10_000)
    assert not np.array_equal(np.power(z, 2), z * z)


# -- on real code: the IR stays verified and typed, the gradient stays right


def _types(f: Function) -> list[str]:
    return [str(call.type) for call in f.calls()]


def test_keeps_the_ir_verified_and_typed() -> None:
    x = np.array([0.5, -1.5, 2.0])
    f = code_ir(energy, x, 3, stage="typed")
    types = _types(f)
    assert SquareToMul().run(f)
    verify(f)
    assert _types(f) == types
    text = str(f)
    assert "call operator.mul(%x, %x) : f64[:]" in text
    assert "call operator.pow(%x, 3) : f64[:]" in text  # not a square
    assert "call operator.pow(%2, 2) : f64" in text  # a float scalar
    assert not SquareToMul().run(f)


def test_gradient_with_the_pass_matches_finite_differences() -> None:
    x, k = np.array([0.5, -1.5, 2.0]), 3
    pipeline: list[t.Any] = ["fold", SquareToMul(), "dce", "cse", "simplify-cfg"]
    rule = gibbous.build_rrule(energy, x, k, passes=pipeline, debug=True)
    y, (_, dx, _) = gibbous.value_and_gradient(rule, energy, x, k)
    assert y == energy(x, k)
    exact = 2 * k**2 * x + 0.1 * 3 * x**2  # d/dx of k^2 sum(x^2) + 0.1 sum(x^3)
    np.testing.assert_allclose(dx, exact, rtol=1e-14)
    eps = 1e-6
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        assert dx[i] == pytest.approx((energy(up, k) - energy(down, k)) / (2 * eps), rel=1e-7)
