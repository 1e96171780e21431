"""Shared helpers of the AD tests: the primitive rules, and a gradient check."""

from __future__ import annotations

import copy
import typing as t

import numpy as np
import pytest

from gibbous.api import build_rrule, value_and_gradient
from gibbous.reverse.derived import DerivedRule
from tests.rules.fd import check_gradient

__all__ = ["check", "rng", "same"]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def same(a: object, b: object) -> bool:
    """Deep equality of values made of numbers, arrays and containers (nan equals nan)."""
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(np.array_equal(a, b, equal_nan=True))
        )
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, t.cast(t.Any, b)))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and not callable(a):
        return type(a) is type(b) and same(vars(a), vars(b))
    return bool(a == b) or (a != a and b != b)


def check(
    f: t.Callable[..., t.Any],
    *args: object,
    rule: DerivedRule | None = None,
    rng: np.random.Generator | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> tuple[DerivedRule, t.Any, tuple[t.Any, ...]]:
    """Gradient of ``f`` at ``args`` by gibbous, checked against the primal's value, central
    finite differences, and the arguments being left as they were."""
    rng = rng or np.random.default_rng(0)
    rule = rule or build_rrule(f, *args)
    before = copy.deepcopy(args)
    ids = [id(a) for a in args]
    y, grads = value_and_gradient(rule, f, *args)
    assert [id(a) for a in args] == ids
    assert same(list(args), list(before)), "the arguments were not restored"
    expected = f(*copy.deepcopy(args))
    assert np.allclose(y, expected, rtol=1e-12, atol=0), (y, expected)
    check_gradient(f, args, grads[1:], rng, rtol=rtol, atol=atol)
    return rule, y, grads
