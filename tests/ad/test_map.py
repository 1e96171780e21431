"""``map(fn, *iterables)`` in differentiated code (gibbous.reverse.higher_order): lazy as Python's,
each item differentiated by the rule of ``fn`` for the items' types (a primitive, or the
derived rule of a Python function), consumed by ``for``, ``list``, ``tuple``, unpacking and
``sum``; gradients against central finite differences."""

from __future__ import annotations

import dataclasses
import math
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.rules.registry import MissingRuleError
from tests.ad.conftest import check


def square(v: t.Any) -> t.Any:
    return v * v


def sines_unpacked(x: t.Any, y: t.Any) -> float:
    a, b = map(np.sin, (x, y))
    return float(np.sum(a * b))


def scipy_style(x: t.Any, loc: float) -> float:
    # What scipy.stats does with its arguments: one rule per item type.
    x, loc, scale = map(np.asarray, (x, loc, 2))
    return float(np.sum((x - loc) / scale))


def squares_of_a_list(xs: list[float]) -> float:
    return sum(map(square, xs))  # a derived rule per item, pulled back in list order


def list_of_rows(A: t.Any) -> float:
    rows = list(map(square, A))
    return float(sum(np.sum(r) for r in rows))


def closure_over_an_argument(x: t.Any, w: float) -> float:
    total = 0.0
    for v in map(lambda a, b: a * b * w, [x, 2.0 * x], (x, x)):
        total = total + v
    return total


def two_iterables_of_floats(xs: list[float], ys: tuple[float, float, float]) -> float:
    return sum(map(math.atan2, xs, ys))


def map_of_a_map(x: t.Any) -> float:
    return float(np.sum(tuple(map(np.exp, map(np.sin, [x, x[::-1]])))[1]))


def called_through_star_args(xs: list[float]) -> float:
    args = (square, xs)
    return sum(map(*args))


def first_item_only(x: float) -> float:
    items = map(lambda v: 1.0 / v, [x, 0.0])  # the second item would divide by zero
    return next(items)


@dataclasses.dataclass(frozen=True)
class Scaled:
    scale: float

    def apply(self, v: float) -> float:
        return v * self.scale


def bound_method_of_a_frozen_object(s: Scaled, xs: list[float]) -> float:
    # The callee's rdata (the receiver's field) comes back through map's pullback.
    return sum(map(s.apply, xs))


def items_in_a_loop(xs: list[float], n: int) -> float:
    s = 0.0
    for _ in range(n):
        s = s + sum(map(square, xs)) * s + 1.0
    return s


@pytest.mark.parametrize(
    "f, args",
    [
        (sines_unpacked, (np.array([0.3, 1.2]), np.array([0.5, -0.7]))),
        (scipy_style, (np.array([0.3, 1.2, -0.4]), 0.25)),
        (squares_of_a_list, ([1.5, -0.5, 2.0],)),
        (list_of_rows, (np.array([[0.2, -1.0], [0.7, 0.4], [1.1, -0.3]]),)),
        (closure_over_an_argument, (1.5, 0.7)),
        (two_iterables_of_floats, ([0.3, -1.2, 0.5], (1.1, 0.4, -0.9))),
        (map_of_a_map, (np.array([0.3, -0.8, 1.4]),)),
        (called_through_star_args, ([0.4, -1.3],)),
        (first_item_only, (0.8,)),
        (items_in_a_loop, ([0.3, -0.2], 3)),
        (bound_method_of_a_frozen_object, (Scaled(1.7), [0.4, -1.1, 2.0])),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_map_gradients(f: t.Callable[..., float], args: tuple[t.Any, ...]) -> None:
    rule, _, _ = check(f, *args)
    check(f, *args, rule=rule)  # warm: the items' rules are kept and reused


def test_map_closed_forms() -> None:
    x, y = np.array([0.3, 1.2]), np.array([0.5, -0.7])
    dx, dy = gibbous.grad(sines_unpacked, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(dx, np.cos(x) * np.sin(y), rtol=1e-14)
    np.testing.assert_allclose(dy, np.sin(x) * np.cos(y), rtol=1e-14)
    assert gibbous.grad(squares_of_a_list)([1.5, -0.5, 2.0]) == [3.0, -1.0, 4.0]
    assert gibbous.grad(closure_over_an_argument, argnums=(0, 1))(1.5, 0.7) == pytest.approx(
        (3 * 2 * 1.5 * 0.7, 3 * 1.5 * 1.5)
    )


def test_map_is_lazy() -> None:
    # Only the item taken is computed (and differentiated): 1 / 0.0 would raise.
    rule = gibbous.build_rrule(first_item_only, 0.8)
    y, (_, dx) = gibbous.value_and_gradient(rule, first_item_only, 0.8)
    assert y == 1.25 and dx == pytest.approx(-1 / 0.64)


def item_without_rule(x: t.Any) -> float:
    return float(np.sum(list(map(np.poly1d, [x]))[0][0]))  # (np.poly1d: a class, no rule)


def test_an_item_without_a_rule_names_the_call() -> None:
    x = np.array([0.5, 3.0])
    with pytest.raises(MissingRuleError, match=r"numpy\.poly1d\(f64\[:\]\)") as e:
        gibbous.grad(item_without_rule)(x)
    assert "test_map.py" in str(e.value)
