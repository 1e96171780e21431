"""Globals a differentiated function writes into: the writes are differentiated, every load of
the global sees them, and the reverse pass restores the global as it restores arguments.

Each function is called several times through one rule, with different arguments, since a
global's fdata lives with the rule across calls (a leftover from one call must not leak into
the next).  The finite differences run the primal with the globals saved and restored around
it, so that they see the state the gradient call sees.
"""

from __future__ import annotations

import copy
import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.api import build_rrule, value_and_gradient
from tests.ad.conftest import same
from tests.rules.fd import check_gradient


class Box:
    def __init__(self) -> None:
        self.v = 0.5
        self.a = np.array([1.0, -2.0])


G = np.zeros(3)
H = np.ones(3)
L: list[t.Any] = [1.5]
D: dict[str, t.Any] = {"w": 0.25}
BOX = Box()
COUNT = [0]  # written with values that carry no derivative: left as the forward pass left it

_STATE = ("G", "H", "L", "D", "BOX")


def _save() -> dict[str, t.Any]:
    return {name: copy.deepcopy(globals()[name]) for name in _STATE}


def _restore(saved: dict[str, t.Any]) -> None:
    for name, value in saved.items():
        held = globals()[name]
        if isinstance(held, np.ndarray):
            held[...] = value
        elif isinstance(held, list):
            held[:] = value
        elif isinstance(held, dict):
            held.clear()
            held.update(value)
        else:
            held.__dict__.clear()
            held.__dict__.update(copy.deepcopy(value.__dict__))


def isolated(f: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    """``f`` run with the globals put back as they were afterwards."""

    def run(*args: t.Any) -> t.Any:
        saved = _save()
        try:
            return f(*args)
        finally:
            _restore(saved)

    return run


# -- functions writing globals


def write_then_read_element(x: np.ndarray) -> float:
    G[0] = 3 * x[0]
    return G[0] + np.sum(x * x)  # type: ignore[no-any-return]


def write_slice_then_sum(x: np.ndarray) -> float:
    G[:] = 3 * x
    return np.sum(G * G)  # type: ignore[no-any-return]


def write_in_place_out(x: np.ndarray) -> float:
    np.multiply(H, x, out=H)
    np.add(H, x, out=H)
    return np.sum(H * H)  # type: ignore[no-any-return]


def read_write_read(x: np.ndarray) -> float:
    before = np.sum(G * G)  # the global's old value, read: a gradient nobody reports
    G[1] = x[1] * x[2]
    return before + np.sum(G * x)  # type: ignore[no-any-return]


def _helper_writes(x: np.ndarray) -> None:
    G[2] = np.sin(x[0])


def callee_writes(x: np.ndarray) -> float:
    _helper_writes(x)
    return G[2] * x[1] + G[0]  # type: ignore[no-any-return]


def list_append(x: np.ndarray) -> float:
    L.append(2 * x[0])
    L.append("tag")  # written with no derivative, into a global that has one
    return L[-2] * x[1] + L[0]  # type: ignore[no-any-return]


def dict_write(x: np.ndarray) -> float:
    D["w"] = x[0] * x[1]
    return D["w"] * x[2]  # type: ignore[no-any-return]


def attribute_write(x: np.ndarray) -> float:
    BOX.v = x[0] ** 2
    BOX.a[:] = x[1:]
    return BOX.v * np.sum(BOX.a)  # type: ignore[no-any-return]


def counts_calls(x: np.ndarray) -> float:
    COUNT[0] += 1
    return np.sum(x * x)  # type: ignore[no-any-return]


def branches_on_write(x: np.ndarray, flag: bool) -> float:
    if flag:
        G[1] = 2 * x[1]
    return np.sum(G) * x[0]  # type: ignore[no-any-return]


WRITERS = [
    write_then_read_element,
    write_slice_then_sum,
    write_in_place_out,
    read_write_read,
    callee_writes,
    list_append,
    dict_write,
    attribute_write,
]


@pytest.mark.parametrize("f", WRITERS, ids=lambda f: f.__name__)
def test_writes_into_globals_are_differentiated(f: t.Callable[..., float]) -> None:
    rng = np.random.default_rng(7)
    rule = build_rrule(f, np.ones(3))
    for _ in range(3):  # one rule, several calls: nothing carries over between them
        x = rng.standard_normal(3)
        before = _save()
        expected = isolated(f)(x.copy())
        y, (_, dx) = value_and_gradient(rule, f, x)
        assert np.isclose(y, expected, rtol=1e-12)
        for name in _STATE:  # the reverse pass restored what the forward pass wrote
            assert same(globals()[name], before[name]), name
        check_gradient(isolated(f), [x], [dx], rng)


def test_the_issue_example_gives_the_true_gradient() -> None:
    x = np.array([1.0, 2.0, 3.0])
    (dx,) = gibbous.grad(write_then_read_element)(x),
    np.testing.assert_allclose(dx, [5.0, 4.0, 6.0])
    dx = gibbous.grad(write_slice_then_sum)(x)
    np.testing.assert_allclose(dx, 18 * x)


def test_a_branch_that_writes_only_sometimes() -> None:
    rng = np.random.default_rng(3)
    rule = build_rrule(branches_on_write, np.ones(3), True)
    for flag in (False, True, True, False, True):
        x = rng.standard_normal(3)
        _, (_, dx, _) = value_and_gradient(rule, branches_on_write, x, flag)
        check_gradient(isolated(lambda x: branches_on_write(x, flag)), [x], [dx], rng)


def test_globals_written_without_a_derivative_keep_the_forward_pass_writes() -> None:
    """A counter is not restored: it never carried a derivative, so it is left as Python
    left it, once per gradient call."""
    COUNT[0] = 0
    rule = build_rrule(counts_calls, np.ones(3))
    for _ in range(3):
        value_and_gradient(rule, counts_calls, np.ones(3))
    assert COUNT[0] == 3


def test_rebinding_a_global_is_refused() -> None:
    def rebinds(x: np.ndarray) -> float:
        global G
        G = G + x
        return np.sum(G)  # type: ignore[no-any-return]

    with pytest.raises(gibbous.UnsupportedConstructError, match="assignment to a global"):
        build_rrule(rebinds, np.ones(3))


# -- globals rebound after the rule was built

SCALE = 2.0


def scaled(x: np.ndarray) -> float:
    return SCALE * np.sum(x * x)  # type: ignore[no-any-return]


def test_a_rebound_global_is_an_error_for_a_built_rule_and_a_rebuild_for_grad() -> None:
    global SCALE
    x = np.array([1.0, 2.0])
    rule = build_rrule(scaled, x)
    g = gibbous.grad(scaled)
    np.testing.assert_allclose(g(x), 4 * x)
    try:
        SCALE = 3.0
        with pytest.raises(gibbous.StaleRuleError, match="global SCALE .* rebound"):
            value_and_gradient(rule, scaled, x)
        np.testing.assert_allclose(g(x), 6 * x)  # grad builds the rule again
        np.testing.assert_allclose(value_and_gradient(build_rrule(scaled, x), scaled, x)[1][1], 6 * x)
    finally:
        SCALE = 2.0
    value_and_gradient(rule, scaled, x)  # bound again to the value it was built with: fine


def _helper_reads_scale(x: np.ndarray) -> float:
    return SCALE * x[0]  # type: ignore[no-any-return]


def calls_a_helper(x: np.ndarray) -> float:
    return _helper_reads_scale(x) + x[1]  # type: ignore[no-any-return]


def test_a_global_a_callee_reads_is_checked_too() -> None:
    global SCALE
    x = np.array([1.0, 2.0])
    rule = build_rrule(calls_a_helper, x)
    try:
        SCALE = 5.0
        with pytest.raises(gibbous.StaleRuleError, match="SCALE"):
            value_and_gradient(rule, calls_a_helper, x)
    finally:
        SCALE = 2.0


# -- callees resolved at run time, built after the caller


def _dynamic_writer(x: np.ndarray) -> None:
    G[2] = np.sin(x[0])


def _dynamic_reader(x: np.ndarray) -> float:
    return G[0] * x[1]  # type: ignore[no-any-return]


CALLEES = {"write": _dynamic_writer, "read": _dynamic_reader}


def reads_what_a_dynamic_callee_wrote(x: np.ndarray, key: str) -> float:
    CALLEES[key](x)
    return G[2] * x[1]  # type: ignore[no-any-return]


def writes_what_a_dynamic_callee_reads(x: np.ndarray, key: str) -> float:
    G[0] = x[0] * x[2]
    return CALLEES[key](x)  # type: ignore[no-any-return]


def test_a_callee_built_later_that_reads_a_written_global_is_made_to_see_the_write() -> None:
    rng = np.random.default_rng(5)
    f = writes_what_a_dynamic_callee_reads
    rule = build_rrule(f, np.ones(3), "read")
    for _ in range(2):
        x = rng.standard_normal(3)
        _, (_, dx, _) = value_and_gradient(rule, f, x, "read")
        check_gradient(isolated(lambda x: f(x, "read")), [x], [dx], rng)


def test_a_callee_built_later_that_writes_what_the_caller_read_plainly_is_refused() -> None:
    f = reads_what_a_dynamic_callee_wrote
    rule = build_rrule(f, np.ones(3), "write")
    before = G.copy()
    with pytest.raises(gibbous.UnsupportedConstructError, match="the global G") as info:
        value_and_gradient(rule, f, np.ones(3), "write")
    assert "_dynamic_writer" in str(info.value) and "test_globals.py" in str(info.value)
    np.testing.assert_array_equal(G, before)
