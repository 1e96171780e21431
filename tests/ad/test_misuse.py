"""Misuse gets a clear error and loses nothing: a wrong ``ybar`` or ``dy``, arrays of dtype
object, a pullback that raises half way through the reverse pass."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule, value_and_gradient, value_and_pullback
from gibbous.ir import types as T
from gibbous.rules.registry import Context, DefaultContext
from gibbous.tangents.model import CoDual, NoTangent
from tests.ad.conftest import check


def doubled(x: np.ndarray) -> np.ndarray:
    x[0] = x[0] * 3.0  # a write the reverse pass must undo, whatever happens after
    return x * 2.0


def pair(x: np.ndarray) -> tuple[np.ndarray, list[float]]:
    return x * 2.0, [x[0], 3]


BAD_YBARS = [
    (1.0, r"ybar should be an array of shape \(3,\) and dtype float64 .*got float 1.0"),
    (np.ones(2), r"shape \(3,\) .* got one of shape \(2,\)"),
    (np.ones((3, 1)), r"got one of shape \(3, 1\)"),
    (np.ones(3) * 1j, "got one of dtype complex128"),
    ("a", "got str 'a'"),
    (None, "got NoneType None"),
    ([1.0, 2.0, 3.0], "got a list of 3 items"),
]


@pytest.mark.parametrize(("ybar", "message"), BAD_YBARS, ids=lambda v: repr(v)[:20])
def test_a_wrong_ybar_is_named_and_loses_nothing(ybar: object, message: str) -> None:
    x = np.array([1.0, 2.0, 3.0])
    rule = build_rrule(doubled, x)
    with pytest.raises(TypeError, match=message) as info:
        value_and_pullback(rule, ybar, doubled, x)
    assert "value_and_pullback: ybar is not a cotangent of the result" in str(info.value)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])  # the forward pass's write undone
    y, (_, dx) = value_and_pullback(rule, np.ones(3), doubled, x)  # the rule still works
    np.testing.assert_allclose(dx, [6.0, 2.0, 2.0])


@pytest.mark.parametrize(
    ("ybar", "message"),
    [
        ((np.ones(3), [1.0]), r"ybar\[1\] should be a list of 2 tangents, got one of 1"),
        ((np.ones(3), (1.0, 1.0)), r"ybar\[1\] should be a list of 2 tangents, got a tuple"),
        ((np.ones(3),), "ybar should be a tuple of 2 tangents, got one of 1"),
        ((np.ones(3), [1.0, 1.0]), r"ybar\[1\]\[1\] should be NoTangent\(\), got float 1.0"),
    ],
    ids=["short list", "tuple for list", "short tuple", "an int's tangent"],
)
def test_a_wrong_ybar_for_a_structured_result(ybar: object, message: str) -> None:
    x = np.array([1.0, 2.0, 3.0])
    rule = build_rrule(pair, x)
    with pytest.raises(TypeError, match=message):
        value_and_pullback(rule, ybar, pair, x)


def test_the_right_ybar_for_a_structured_result() -> None:
    x = np.array([1.0, 2.0, 3.0])
    rule = build_rrule(pair, x)
    _, (_, dx) = value_and_pullback(rule, (np.ones(3), [1.0, NoTangent()]), pair, x)
    np.testing.assert_allclose(dx, [3.0, 2.0, 2.0])
    _, (_, dx) = value_and_pullback(rule, (np.ones(3, np.float32), [1, NoTangent()]), pair, x)
    np.testing.assert_allclose(dx, [3.0, 2.0, 2.0])


def times(x: float, y: float) -> float:
    return x * y


@pytest.mark.parametrize("dy", [None, "a", np.ones(2), (1.0,)], ids=repr)
def test_a_wrong_dy_to_a_pullback_is_named_and_touches_nothing(dy: object) -> None:
    rule = build_rrule(times, 1.0, 2.0)
    nt = NoTangent()
    _, pullback = rule(CoDual(times, nt), CoDual(1.5, nt), CoDual(2.0, nt))
    with pytest.raises(TypeError, match="pullback of times was given a dy .* should be a real"):
        pullback(dy)
    assert pullback(1.0) == (nt, 2.0, 1.5)  # the same pullback, right this time


def test_a_dy_for_an_array_result_that_goes_into_fdata() -> None:
    rule = build_rrule(doubled, np.ones(3))
    x = np.array([1.0, 2.0, 3.0])
    y, pullback = rule(CoDual(doubled, NoTangent()), CoDual(x, np.zeros(3)))
    with pytest.raises(TypeError, match=r"dy should be NoTangent\(\), got an array"):
        pullback(np.ones(3))  # the array's cotangent belongs in y.fdata
    y.fdata[:] = 1.0
    pullback(NoTangent())
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


# -- arrays of dtype object


def object_from_list(x: float) -> float:
    a = np.array([x * 2.0, 1.0], dtype=object)
    return float(a[0]) + x


def object_written(x: float) -> float:
    a = np.empty(2, dtype=object)
    a[0] = x * 2.0
    return a[0] + x  # type: ignore[no-any-return]


def object_argument(a: np.ndarray) -> float:
    return a[0] * a[1]  # type: ignore[no-any-return]


def object_of_strings(x: float) -> float:
    labels = np.array(["a", "b"], dtype=object)
    return x * len(labels[0])


@pytest.mark.parametrize(
    ("f", "arg"),
    [
        (object_from_list, 1.5),
        (object_written, 1.5),
        (object_argument, np.array([1.0, 2.0], dtype=object)),
    ],
    ids=lambda v: getattr(v, "__name__", "arg"),
)
def test_numbers_with_a_derivative_are_refused_in_object_arrays(
    f: t.Callable[..., float], arg: object
) -> None:
    with pytest.raises(TypeError, match="an array of dtype object would hold .*astype"):
        value_and_gradient(build_rrule(f, arg), f, arg)


def test_object_arrays_without_derivatives_are_fine() -> None:
    check(object_of_strings, 1.5)
    labels = np.array(["a", 1], dtype=object)
    _, (_, g) = value_and_gradient(build_rrule(counted, labels), counted, labels)
    assert g is NoTangent()


def counted(a: np.ndarray) -> float:
    return float(len(a))


# -- a pullback that raises


def fragile(v: float) -> float:
    return v * 1.0


FAIL = [False]
CTX = Context("misuse-tests", parent=DefaultContext)


@gibbous.primitive(fragile, T.FLOAT, ctx=CTX)
def _fragile_rrule(f: t.Any, v: t.Any) -> t.Any:
    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if FAIL[0]:
            raise RuntimeError("the user's pullback failed")
        return NoTangent(), dy

    return CoDual(v.primal * 1.0, NoTangent()), pullback


def _helper_mutates(x: np.ndarray, log: list[float]) -> float:
    x[1] = x[1] * 5.0
    log.append(x[1])
    return fragile(x[1])


def mutates_around_fragile(x: np.ndarray, log: list[float]) -> float:
    x[0] = 2 * x[0]
    log.append(x[0])
    y = _helper_mutates(x, log)  # the failure is inside a callee's reverse pass
    x[1] = 3.0
    log.append(y)
    return y + x[0]  # type: ignore[no-any-return]


def test_a_pullback_that_raises_leaves_the_arguments_restored_and_the_rule_usable() -> None:
    x, log = np.array([1.0, 2.0]), [0.5]
    rule = build_rrule(mutates_around_fragile, x, log, ctx=CTX)
    FAIL[0] = True
    try:
        with pytest.raises(RuntimeError, match="the user's pullback failed"):
            value_and_gradient(rule, mutates_around_fragile, x, log)
    finally:
        FAIL[0] = False
    np.testing.assert_array_equal(x, [1.0, 2.0])  # every write undone, not just the last
    assert log == [0.5]
    y, (_, dx, _) = value_and_gradient(rule, mutates_around_fragile, x, log)
    assert y == 12.0
    np.testing.assert_array_equal(dx, [2.0, 5.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])


# -- the user's line on errors out of the forward and reverse programs


def _inner_set(x: float) -> float:
    s = {x * 2.0}
    return sum(s)


def outer_set(x: float) -> float:
    return _inner_set(x + 1.0) * 2.0


def test_an_error_inside_a_rule_names_the_users_lines_innermost_first() -> None:
    with pytest.raises(TypeError, match="would go into a set") as info:
        value_and_gradient(build_rrule(outer_set, 1.0), outer_set, 1.0)
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 2, notes
    assert "in _inner_set" in notes[0] and "test_misuse.py" in notes[0]
    assert "s = {x * 2.0}" in notes[0]
    assert "in outer_set" in notes[1] and "_inner_set(x + 1.0)" in notes[1]


def test_an_error_in_the_reverse_pass_names_the_users_line() -> None:
    x, log = np.array([1.0, 2.0]), [0.5]
    rule = build_rrule(mutates_around_fragile, x, log, ctx=CTX)
    FAIL[0] = True
    try:
        with pytest.raises(RuntimeError) as info:
            value_and_gradient(rule, mutates_around_fragile, x, log)
    finally:
        FAIL[0] = False
    notes = getattr(info.value, "__notes__", [])
    assert any("in _helper_mutates" in n and "return fragile(x[1])" in n for n in notes), notes
