"""Forward mode through lists and tuples as real code writes them: constants appended, appends
inside ``try``, a list appended to after a tuple holding it was made; against central finite
differences."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

from gibbous.forward import build_frule, jvp


def central(f: t.Callable[[float], t.Any], x: float, h: float = 1e-6) -> t.Any:
    return (np.asarray(f(x + h), dtype=float) - np.asarray(f(x - h), dtype=float)) / (2 * h)


def appends_a_constant(x: float) -> float:
    out = [x]
    out.append(1.0)  # a constant float: its tangent is 0.0, not None
    out.append(2)
    return out[0] + out[1] * x + out[2] * x


def appends_inside_try(x: float) -> float:
    out = []
    try:
        out.append(x * 2.0)  # ``out.append`` is read where it may raise
    finally:
        out.append(1.0)
    return out[0] * out[1] + out[0] ** 2


@pytest.mark.parametrize("f", [appends_a_constant, appends_inside_try])
def test_lists(f: t.Callable[[float], float]) -> None:
    rule = build_frule(f, 1.5)
    y, dy = jvp(rule, f, (1.5,), (1.0,))
    assert y == f(1.5)
    assert dy == pytest.approx(central(f, 1.5), rel=1e-7)


def logs_after_the_tuple(x: float) -> t.Any:
    log = ["start"]
    counts = [1]
    out = (x * x, log, counts)
    log.append("end")  # the lists grow after the tuple holding them was made
    counts.append(2)
    return out


def test_lists_without_numbers_in_a_result_have_no_tangent() -> None:
    rule = build_frule(logs_after_the_tuple, 3.0)
    y, dy = jvp(rule, logs_after_the_tuple, (3.0,), (1.0,))
    assert y == (9.0, ["start", "end"], [1, 2])
    assert dy == (6.0, None, None)


def reorders(xs: list[float]) -> t.Any:
    lst = list(xs)
    lst.append(0.5)
    lst.sort()
    lst.reverse()
    lst.remove(lst[1])  # (by equality: the tangent of the item removed goes with it)
    lst.sort(key=abs, reverse=True)
    first = lst[0] * 2 + lst[-1] * lst[1]
    lst.clear()
    lst.append(first)
    return first, lst


def test_list_methods_that_reorder_or_drop_items() -> None:
    """``sort`` (with a key, reversed), ``reverse``, ``remove`` and ``clear`` on a list with a
    tangent move the tangents as the items move."""
    xs = [3.0, -1.0, 2.0, -4.0]
    d = [1.0, 10.0, 100.0, 1000.0]
    rule = build_frule(reorders, xs)
    y, dy = jvp(rule, reorders, (xs,), (d,))
    assert y == reorders(xs)
    h = 1e-6
    up = reorders([x + h * e for x, e in zip(xs, d)])[0]
    down = reorders([x - h * e for x, e in zip(xs, d)])[0]
    assert dy[0] == pytest.approx((up - down) / (2 * h), rel=1e-7)
    assert dy[1] == [dy[0]]
    assert dy[0] == 2000.5  # (2 · 1000 from -4's tangent, 3 · 0 + 0.5 · 1)
