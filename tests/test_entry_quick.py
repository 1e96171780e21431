"""The entry points' quick path (``gibbous.api._direct``): a rule's own function called with
positional arguments runs its forward and reverse pass at once (``DerivedRule.gradient``),
with no pullback object.  It must keep every check of the general path (``_Run`` and the
pullback) and give the same results."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import value_and_gradient, value_and_pullback
from gibbous.reverse.derived import PartialCallError

Array = np.ndarray[t.Any, t.Any]


def _half_done(x: Array) -> Array:
    y = x * 2.0
    if y[0] > 0:
        raise ValueError("late")
    return y


def catches(x: Array) -> t.Any:
    try:
        return np.sum(_half_done(x))
    except ValueError:  # after _half_done recorded differentiable work: lost to the gradient
        return np.sum(x)


def fails(x: Array) -> t.Any:
    y = x * 2.0
    if y[0] > 0:
        raise ValueError("late")
    return np.sum(y)


def doubled(x: Array) -> Array:
    return x * 2.0


def _entry_points(f: t.Callable[..., t.Any], rule: t.Any) -> list[t.Callable[..., t.Any]]:
    prepared = gibbous.prepare_gradient(f, *_SAMPLES[f])
    return [lambda *a: value_and_gradient(rule, f, *a), prepared]


_SAMPLES: dict[t.Any, tuple[object, ...]] = {
    catches: (-np.ones(3),),
    fails: (-np.ones(3),),
    doubled: (np.ones(3),),
}


@pytest.mark.parametrize("which", [0, 1], ids=["value_and_gradient", "prepared"])
def test_a_call_lost_to_a_caught_exception_is_refused(which: int) -> None:
    rule = gibbous.build_rrule(catches, -np.ones(3))
    call = _entry_points(catches, rule)[which]
    with pytest.raises(PartialCallError, match="_half_done raised"):
        call(np.ones(3))
    value, (_, dx) = call(-np.ones(3))  # the next call starts afresh
    assert value == -6.0 and np.array_equal(dx, np.full(3, 2.0))


@pytest.mark.parametrize("which", [0, 1], ids=["value_and_gradient", "prepared"])
def test_a_failed_forward_pass_leaves_nothing_pending(which: int) -> None:
    rule = gibbous.build_rrule(fails, -np.ones(3))
    call = _entry_points(fails, rule)[which]
    with pytest.raises(ValueError, match="late"):
        call(np.ones(3))
    if which == 0:
        assert rule.depth == 0 and len(rule.tape) == 0
    value, (_, dx) = call(-np.ones(3))
    assert value == -6.0 and np.array_equal(dx, np.full(3, 2.0))


def test_a_non_scalar_result_leaves_its_call_pending_as_a_dropped_pullback_does() -> None:
    rule = gibbous.build_rrule(doubled, np.ones(3))
    with pytest.raises(TypeError, match="returned ndarray; use value_and_pullback"):
        value_and_gradient(rule, doubled, np.ones(3))
    assert rule.depth == 1  # the next top-level call abandons it
    y, (_, dx) = value_and_pullback(rule, np.ones(3), doubled, np.ones(3))
    assert np.array_equal(y, np.full(3, 2.0)) and np.array_equal(dx, np.full(3, 2.0))
    assert rule.depth == 0


def total(x: Array, y: Array) -> t.Any:
    return np.sum(x * y) + np.sum(x)


def scaled(x: Array, a: float, n: int) -> t.Any:
    return np.sum(x * a) * n


def _closure() -> t.Callable[[Array], t.Any]:
    w = np.arange(3.0)

    def inner(x: Array) -> t.Any:
        return np.sum(x * w)

    return inner


closed = _closure()


def _f_order() -> Array:
    return np.asfortranarray(np.arange(6.0).reshape(2, 3))


CALLS: list[tuple[t.Callable[..., t.Any], t.Callable[[], tuple[object, ...]]]] = [
    (total, lambda: (np.linspace(0.0, 1.0, 4), np.ones(4))),  # a view
    (total, lambda: (np.ones(4),) * 2),  # one array twice: aliases
    (total, lambda: (_f_order(), np.ones((2, 3)))),  # Fortran order
    (scaled, lambda: (np.ones(3), 2.5, 3)),  # a float and an int
    (closed, lambda: (np.ones(3),)),  # a closure: its cells have a gradient
]


@pytest.mark.parametrize("f, make", CALLS, ids=["view", "aliases", "fortran", "scalars", "closure"])
def test_the_quick_path_gives_what_the_general_path_gives(
    f: t.Callable[..., t.Any], make: t.Callable[[], tuple[object, ...]]
) -> None:
    rule = gibbous.build_rrule(f, *make())
    value, grads = value_and_gradient(rule, f, *make())
    # value_and_pullback takes the general path (_Run and a pullback object).
    general_value, general = value_and_pullback(rule, 1.0, f, *make())
    assert value == general_value
    prepared = gibbous.prepare_gradient(f, *make())
    for _ in range(2):  # the second call reuses the first's arrays
        prepared_value, prepared_grads = prepared(*make())
        assert prepared_value == value
        _same(prepared_grads, grads)
    _same(grads, general)


def _same(a: tuple[t.Any, ...], b: tuple[t.Any, ...]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y) and x.flags.c_contiguous == y.flags.c_contiguous
        elif isinstance(x, tuple):
            _same(x, y)
        else:
            assert type(x) is type(y) and (x == y or repr(x) == repr(y)), (x, y)


def squares(x: Array) -> t.Any:
    return np.sum(x * x)


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.linspace(0.0, 1.0, 5),
        lambda: np.arange(10.0)[::2],
        lambda: np.arange(10.0)[2:7],
        # C-contiguous by NumPy's flags (a dimension of 1), but not with np.zeros' strides
        lambda: np.ones((3, 5))[1:2, :].T,
    ],
    ids=["linspace", "strided", "slice", "relaxed-strides"],
)
def test_a_view_gets_the_gradient_its_copy_gets(make: t.Callable[[], Array]) -> None:
    view = make()
    rule = gibbous.build_rrule(squares, view)
    assert view.base is not None
    value, (_, dview) = value_and_gradient(rule, squares, view)
    copy_value, (_, dcopy) = value_and_gradient(rule, squares, view.copy())
    assert value == copy_value and np.array_equal(dview, dcopy)
    assert dview.strides == view.strides  # the view's layout (zero_fdatas' for a strided one)


def test_a_view_of_a_previous_gradient_passed_back_is_not_zeroed() -> None:
    prepared = gibbous.prepare_gradient(squares, np.ones(5))
    _, (_, g) = prepared(np.arange(5.0))
    kept = g.copy()
    value, (_, g2) = prepared(g[:])  # a view of the array the prepared gradient would reuse
    assert value == np.sum(kept * kept) and np.array_equal(g2, 2 * kept)
