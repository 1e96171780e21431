"""What forward + reverse promise about the world: pullbacks run once each, in order; the
reverse pass does not rewind random number generators; arguments come back as they were."""

from __future__ import annotations

import copy
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule, value_and_gradient
from gibbous.rules.stateful import PullbackOrderError
from gibbous.tangents.model import CoDual, zero_fdatas
from tests.ad.conftest import check, same


def cube_sum(x: np.ndarray, y: float) -> float:
    return float(np.sum(x**3)) * y


def _forward(rule: t.Any, f: t.Any, *args: object) -> tuple[t.Any, t.Any]:
    fdatas = zero_fdatas(f, *args)
    return t.cast(tuple[t.Any, t.Any], rule(CoDual(f, fdatas[0]), *map(CoDual, args, fdatas[1:])))


def test_a_pullback_called_twice_raises(rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    rule = build_rrule(cube_sum, x, 2.0)
    _, pullback = _forward(rule, cube_sum, x, 2.0)
    pullback(1.0)
    with pytest.raises(PullbackOrderError, match="out of order|each once"):
        pullback(1.0)
    check(cube_sum, x, 2.0, rule=rule, rng=rng)  # the rule is still usable


def test_pullbacks_out_of_order_raise(rng: np.random.Generator) -> None:
    x = rng.standard_normal(3)
    rule = build_rrule(cube_sum, x, 2.0)
    _, first = _forward(rule, cube_sum, x, 2.0)
    _, second = _forward(rule, cube_sum, x, 3.0)
    with pytest.raises(PullbackOrderError, match="out of order"):
        first(1.0)
    second(1.0)
    first(1.0)
    with pytest.raises(PullbackOrderError):
        second(1.0)  # already run


def noisy(x: np.ndarray, rng: np.random.Generator) -> float:
    noise = rng.standard_normal(x.shape)
    return float(np.sum(x * x * noise))


@pytest.mark.parametrize("seed", [0, 7])
def test_the_reverse_pass_does_not_rewind_random_number_generators(seed: int) -> None:
    x = np.linspace(-1.0, 1.0, 5)
    gen = np.random.default_rng(seed)
    rule = build_rrule(noisy, x, gen)
    plain = np.random.default_rng(seed)
    expected_value = noisy(x, plain)  # the state a plain primal call leaves
    drawn = np.random.default_rng(seed).standard_normal(x.shape)
    value, (_, dx, _) = value_and_gradient(rule, noisy, x, gen)
    assert gen.bit_generator.state == plain.bit_generator.state
    assert value == expected_value
    assert np.allclose(dx, 2 * x * drawn)
    # The next call draws the next numbers, as the primal would.
    value2, (_, dx2, _) = value_and_gradient(rule, noisy, x, gen)
    assert value2 == noisy(x, plain)
    assert gen.bit_generator.state == plain.bit_generator.state
    assert not np.allclose(dx2, dx)


def mutates_nested(state: dict[str, t.Any], scale: float) -> float:
    weights = state["layers"][0]
    weights *= scale  # in place, two containers down
    state["layers"][1][0][:] = weights[:2] ** 2  # into an array inside a tuple inside a list
    state["layers"].append(weights.sum())
    state["meta"]["count"] += 1
    bias = state["meta"]["bias"]
    state["meta"]["bias"] = bias * scale
    return float(np.sum(state["layers"][1][0]) + state["layers"][-1] * state["meta"]["bias"])


def test_arguments_and_everything_they_reach_are_restored(rng: np.random.Generator) -> None:
    state: dict[str, t.Any] = {
        "layers": [rng.standard_normal(3), (rng.standard_normal(2), 4.0)],
        "meta": {"count": 0, "bias": 0.5},
    }
    inner = [state["layers"], state["layers"][0], state["layers"][1][0], state["meta"]]
    ids = [id(o) for o in inner]
    before = copy.deepcopy(state)
    rule = build_rrule(mutates_nested, state, 1.5)
    for _ in range(2):
        value, grads = value_and_gradient(rule, mutates_nested, state, 1.5)
        assert same(state, before)
        assert [id(o) for o in inner] == ids  # the same objects, not copies
        assert value == mutates_nested(copy.deepcopy(before), 1.5)
    check(mutates_nested, state, 1.5, rule=rule, rng=rng)


def builds_and_writes(x: np.ndarray) -> tuple[np.ndarray, list[float]]:
    out = np.zeros_like(x)
    out[1:] = x[:-1] * 2.0  # written by a stateful rule, which the reverse pass undoes
    seen: list[float] = []
    for v in x:
        seen.append(float(v) * 3.0)
    return out, seen


def test_value_and_pullback_returns_the_result_the_forward_pass_made() -> None:
    from gibbous.api import value_and_pullback

    x = np.array([1.0, 2.0, 3.0])
    rule = build_rrule(builds_and_writes, x)
    ybar = (np.ones(3), [1.0, 1.0, 1.0])
    value, (_, dx) = value_and_pullback(rule, ybar, builds_and_writes, x)
    assert same(value, builds_and_writes(x))  # not the zeros and empty list rewound to
    assert np.allclose(dx, [2.0 + 3.0, 2.0 + 3.0, 3.0])


def test_a_number_with_a_derivative_is_refused_on_its_way_into_a_set() -> None:
    # Regression: sum({2 * x}) + x gave 1.0 (the set dropped the first term's derivative).
    def through_a_set(x: float) -> float:
        return sum({2 * x}) + x

    with pytest.raises(TypeError, match="would go into a set, which keeps no derivative"):
        gibbous.grad(through_a_set)(1.5)

    def labels_only(x: float, labels: list[str]) -> float:
        return x * len(set(labels))  # sets of what has no derivative are fine

    assert gibbous.grad(labels_only)(1.5, ["a", "b", "a"]) == 2.0
