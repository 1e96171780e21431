"""Forward rules of reductions, constructors, joins and scalar functions that had reverse rules
only: jvp against central finite differences (the forward program's value is the primal's,
bit for bit), the refusals of what they do not take, and Hessian-vector products through the
rules written out."""

from __future__ import annotations

import math
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.forward import ForwardModeError, build_frule, jvp

from tests.forward.test_jvp import check
from tests.forward.test_second_order import _fd_hvp

RNG = np.random.default_rng(21)
X = RNG.standard_normal((3, 4))
V = RNG.standard_normal(5)
WITH_ZERO = X.copy()
WITH_ZERO[1, 2] = 0.0
WITH_NAN = X.copy()
WITH_NAN[0, 1], WITH_NAN[2, 3] = np.nan, np.nan
NON_FINITE = X.copy()
NON_FINITE[0, 1], NON_FINITE[1, 2], NON_FINITE[2, 0] = np.nan, np.inf, -np.inf


# --- reductions and scans -------------------------------------------------------------------


def spreads(x: np.ndarray) -> t.Any:
    return (
        np.std(x, axis=0, ddof=1)
        + np.var(x, 0)
        + x.var(axis=0, keepdims=True)[0]
        + x.std()
        + np.var([x[0, 0], 2.0 * x[1, 1], 0.5])  # (a list: NumPy makes an array of it)
    )


def spread_into(x: np.ndarray) -> t.Any:  # (out=: the call without it, then a copy)
    out = np.zeros(4)
    np.std(x, axis=0, out=out)
    return out * x[0]


def float_ddof(x: np.ndarray, d: float) -> t.Any:  # (ddof has a derivative: S / (N - ddof))
    return np.var(x, ddof=d) + np.sum(np.std(x, axis=1, ddof=d)) + np.std(x, correction=d)


def products(x: np.ndarray) -> t.Any:
    return (
        np.prod(x, axis=0)
        + np.prod(x)
        + np.prod(x, axis=1, keepdims=True)[:, 0].sum()
        + x.prod(axis=-1).sum()
        + np.prod(x, axis=(0, 1))
    )


def scans(x: np.ndarray) -> t.Any:
    return np.cumprod(x, axis=1) + np.cumprod(x).reshape(3, 4) + x.cumprod(0)


def averages(x: np.ndarray, w: np.ndarray) -> t.Any:
    return (
        np.average(x, axis=1, weights=w)  # (1-D weights along the axis, with a tangent)
        + np.average(x, weights=x * x + 1.0)
        + np.average(x)
        + np.average(x, axis=0, keepdims=True).sum()
    )


def nan_reductions(x: np.ndarray) -> t.Any:
    return np.nanmean(x, axis=0) + np.nansum(x, axis=1).sum() + np.nanmean(x) * np.nansum(x)


def peak_to_peak(x: np.ndarray) -> t.Any:
    return np.ptp(x, axis=1) + np.ptp(x) + np.ptp(x, 0).sum()


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (spreads, (X,)),
        (spread_into, (X,)),
        (float_ddof, (X, 0.5)),
        (products, (X,)),
        (products, (WITH_ZERO,)),  # (exact with a zero: the products of the others)
        (scans, (X,)),
        (scans, (WITH_ZERO,)),
        (averages, (X, RNG.uniform(0.5, 1.5, 4))),
        (nan_reductions, (WITH_NAN,)),
        (peak_to_peak, (X,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_reductions(f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> None:
    check(f, *args)


def written_out(x: np.ndarray) -> t.Any:
    _, r = divmod(x, 0.7)
    fraction, _ = math.modf(x[0, 0] * 3.0)
    return (
        np.sum(np.std(x, axis=0, ddof=1)) + np.sum(x.var(axis=1, keepdims=True))
        + np.sum(np.prod(x, axis=0)) + np.prod(x) + np.sum(x.prod(axis=1, keepdims=True))
        + np.sum(np.nanmean(x, axis=1)) + np.nansum(x) + np.sum(np.ptp(x, axis=1))
        + np.sum(np.average(x, axis=0, weights=np.arange(1.0, 4.0)))
        + np.sum(np.nan_to_num(x) * r) + np.sum(np.append(x, 0.5)) + fraction
        + np.sum(x.astype(np.float64) * np.full((3, 4), x[1, 1]))
    )  # fmt: skip


def test_tangents_are_written_out_where_types_are_known() -> None:
    """No tangent function is called: the tangents are NumPy calls, which reverse mode can
    differentiate again."""
    from gibbous.inspect import code_ir

    assert "forward.tangent<" not in str(code_ir(written_out, X, stage="jvp"))
    check(written_out, X)


# --- clip, nan_to_num, constructors, copies and joins ---------------------------------------


def clipped(x: np.ndarray, lo: np.ndarray) -> t.Any:
    return np.clip(x, lo, 0.5) + x.clip(max=0.3) + np.clip(x[0, 0], a_min=-0.1, a_max=None)


def nan_to_num(x: np.ndarray, a: float) -> t.Any:
    return np.nan_to_num(x, nan=a, posinf=2 * a, neginf=-a) * a + np.nan_to_num(x[1, 1])


def constructors(x: float, a: float) -> t.Any:
    return (
        np.full((2, 3), x * a)
        + np.full_like(np.ones((2, 3)), a)
        + np.full((2,), fill_value=x)[0]
        + np.linspace(x, a, 3)
        + np.linspace(x, stop=a, num=3, endpoint=False)
        + np.arange(x, a + 4.0, 1.5)[:3]
        + np.arange(x, a + 2.0)[:3]
    )


def copies(x: np.ndarray) -> t.Any:
    return (
        x.astype(np.float64) * 2.0
        + np.asanyarray(x)
        + np.ascontiguousarray(x.T).T
        + np.dstack((x, x * x))[..., 1]
        + np.rollaxis(x[None], 0, 3)[..., 0]
    )


def joins(x: np.ndarray, v: float) -> t.Any:
    return (
        np.append(x, v).sum()
        + np.insert(x, 1, v, axis=1).sum() * np.delete(x, [0], axis=1).sum()
        + np.append(x[0], 2.0)[-1]
        + np.insert(x[0], [0, 2], x[1, :2]).sum()
    )


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (clipped, (X, np.full(4, -0.4))),
        (nan_to_num, (NON_FINITE, 0.7)),
        (constructors, (0.3, 1.7)),
        (copies, (X,)),
        (joins, (X, 0.5)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_arrays(f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> None:
    check(f, *args)


# --- Python's builtins and math -------------------------------------------------------------


def extremes(x: float, y: float) -> t.Any:
    return max(x, y) * min([x, y, 2.0]) + max([x * y, y], key=abs) + min((), default=x)


def extremes_of_an_array(v: np.ndarray) -> t.Any:
    return max(v) + min(v[1:]) * 2.0 + max(v[0], 0.25, v[2])


def math_products(v: np.ndarray) -> t.Any:
    return (
        math.prod([v[0], v[1], 2.0])
        + math.prod(v, start=1.5)
        + math.prod([v[0], 0.0, v[2]])  # (a zero factor: the others' tangents still count)
        + math.hypot(v[0], v[2], 3.0)
        + math.hypot(v[1])
    )


def parts(x: float) -> t.Any:
    fraction, whole = math.modf(x * 3.0)
    mantissa, exponent = math.frexp(x)
    quotient, remainder = divmod(x * 5.0, 1.5)
    return fraction * whole + mantissa * exponent + quotient * remainder


def array_divmod(x: np.ndarray, y: np.ndarray) -> t.Any:
    q, r = np.divmod(x, y)
    q2, r2 = divmod(x, 0.7)
    return q * r + r2 * q2


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (extremes, (0.7, -1.3)),
        (extremes, (-0.7, 1.3)),
        (extremes_of_an_array, (V,)),
        (math_products, (V,)),
        (parts, (0.7,)),
        (parts, (-2.3,)),
        (array_divmod, (np.array([3.7, -2.3, 5.5]), np.array([1.2, 0.9, -1.6]))),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_builtins_and_math(f: t.Callable[..., t.Any], args: tuple[t.Any, ...]) -> None:
    check(f, *args)


# --- comparisons of values whose types the build cannot tell --------------------------------


def compares_items(x: float, items: list[t.Any]) -> t.Any:
    v, w = items[0], items[1]  # (of a list of mixed items: types not known)
    flags = (v > 0.5) + (v >= w) + (v < 2.0) + (v <= w) + (v == w) + (v != w)
    return x * v * flags


def test_comparisons_of_unknown_types_have_no_tangent() -> None:
    check(compares_items, 0.7, [1.5, 0.25, "a"])
    check(compares_items, 0.7, [0.25, 0.25, "a"])


class Fuzzy:
    """A comparison that returns a float: it would need a tangent."""

    def __init__(self, v: float) -> None:
        self.v = v

    def __lt__(self, other: float) -> float:
        return self.v - other


def fuzzy_less(x: float, items: list[t.Any]) -> t.Any:
    return x * (items[0] < 0.5)


def test_a_comparison_returning_a_float_is_refused_by_name() -> None:
    items = [Fuzzy(1.0), "a"]
    rule = build_frule(fuzzy_less, 0.7, items)
    with pytest.raises(ForwardModeError, match=r"operator\.lt returned a float"):
        jvp(rule, fuzzy_less, (0.7, items), (1.0, None))


# --- refusals -------------------------------------------------------------------------------


def var_where(x: np.ndarray) -> t.Any:
    return np.var(x, where=x > 0)


def prod_initial(x: np.ndarray) -> t.Any:
    return np.prod(x, initial=2.0)


def nan_to_num_in_place(x: np.ndarray) -> t.Any:
    return np.nan_to_num(x, copy=False)


def max_of_an_iterator(v: np.ndarray) -> t.Any:
    return max(iter([v[0], v[1]]))


@pytest.mark.parametrize(
    ("f", "arg", "name"),
    [
        (var_where, X, "numpy.var"),
        (prod_initial, X, "numpy.prod"),
        (nan_to_num_in_place, X, "numpy.nan_to_num"),
        (max_of_an_iterator, V, "builtins.max"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_unsupported_options_are_refused_by_name(
    f: t.Callable[..., t.Any], arg: t.Any, name: str
) -> None:
    with pytest.raises(ForwardModeError, match=rf"{name}\(.*no forward rule"):
        build_frule(f, arg)


def std_of_item(x: float, items: list[t.Any]) -> t.Any:
    return np.std(items[0], axis=0) * x  # (the item's type is not known when it is built)


def prod_of_item(x: float, items: list[t.Any]) -> t.Any:
    return np.prod(items[0]) * x


def clip_of_item(x: float, items: list[t.Any]) -> t.Any:
    return np.clip(items[0], -0.5, 0.5) * x


def cast_to_item(x: float, items: list[t.Any]) -> t.Any:
    return (np.ones(3) * x).astype(items[0])


@pytest.mark.parametrize(
    ("f", "item", "words"),
    [
        (std_of_item, np.ones((3, 2)) * (1 + 2j), "numpy.std of complex values"),
        (prod_of_item, np.ones(3) * (1 + 2j), "numpy.prod of complex values"),
        (clip_of_item, np.ones(3) * (1 + 2j), "numpy.clip of complex values"),
        (cast_to_item, np.complex128, "numpy.ndarray.astype to complex128"),
        (cast_to_item, np.int64, "numpy.ndarray.astype to int64"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_complex_values_found_at_run_time_are_refused_by_name(
    f: t.Callable[..., t.Any], item: t.Any, words: str
) -> None:
    items = [item, "a"]  # (a list of mixed items: its items' types are not known)
    rule = build_frule(f, 0.5, items)
    with pytest.raises(ForwardModeError, match=words):
        jvp(rule, f, (0.5, items), (1.0, None))


# --- Hessian-vector products through the rules written out ----------------------------------


def spread_loss(x: np.ndarray) -> t.Any:
    return np.sum(np.var(x, axis=0) * np.std(x, axis=1, ddof=1)[:, None]) + np.std(x) ** 2


def product_loss(x: np.ndarray) -> t.Any:
    return np.sum(np.prod(x, axis=0)) + np.prod(x[0]) * np.sum(np.prod(x, axis=1, keepdims=True))


def robust_loss(x: np.ndarray) -> t.Any:
    return np.sum(np.nanmean(x * x, axis=1)) + np.nansum(np.sin(x)) + np.sum(np.ptp(x, axis=0))


@pytest.mark.parametrize(
    ("f", "x"),
    [
        (spread_loss, X),
        (product_loss, X),
        (product_loss, WITH_ZERO),
        (robust_loss, X),
        (written_out, X),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_hvp_matches_finite_differences_of_gradients(f: t.Callable[..., t.Any], x: t.Any) -> None:
    v = RNG.standard_normal(x.shape)
    np.testing.assert_allclose(gibbous.hvp(f, x, v), _fd_hvp(f, x, v), rtol=1e-5, atol=1e-6)
