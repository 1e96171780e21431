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
