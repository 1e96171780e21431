"""The runtime pieces of derived rules: stacks, adjoint sums, dynamic call sites."""

from __future__ import annotations

import numpy as np
import pytest

from gibbous.rules.derived import Stack, accum
from gibbous.rules.stateful import PullbackOrderError
from gibbous.rules.tangents import NO_TANGENT, Tangent
from tests.ad.conftest import check


def test_stack_keeps_its_list_and_drops_references() -> None:
    s = Stack()
    for i in range(3):
        s.push(i)
    items = s.items
    assert (s.pop(), s.pop(), len(s)) == (2, 1, 1)
    assert s.items is items and items == [0, None, None]
    s.push("a")
    assert s.items is items and items == [0, "a", None] and len(s) == 2
    s.reset()
    assert len(s) == 0 and items == [None, None, None]
    with pytest.raises(PullbackOrderError):
        s.pop()


def test_accum_adds_rdata() -> None:
    assert accum(1.0, 2.0) == 3.0
    assert accum(1.0, NO_TANGENT) == 1.0 and accum(NO_TANGENT, 2.0) == 2.0
    assert accum(1j, 2.0) == 2.0 + 1j
    assert accum((1.0, NO_TANGENT), (2.0, NO_TANGENT)) == (3.0, NO_TANGENT)
    assert accum(Tangent({"a": 1.0}), Tangent({"a": 0.5})) == Tangent({"a": 1.5})
    assert isinstance(accum(np.float32(1), np.float32(2)), np.float32)


def via_dynamic(z: complex, w: complex) -> float:
    methods = [z.conjugate]  # the callee is only known at run time
    m = methods[0]
    return float(np.real(m() * w))


def test_dynamic_call_sites_handle_bound_methods() -> None:
    _, _, grads = check(via_dynamic, 1.0 + 2.0j, 0.5 - 1j)
    assert grads[1] == 0.5 - 1j  # d Re(conj(z) w) = w


def table_of_functions(x: float, y: float) -> float:
    fs = [np.sin, np.cos, abs]
    total = 0.0
    for f in fs:
        total = total + f(x) * y  # one site, three callees: one rule per callee kept
    return total


def test_dynamic_call_sites_keep_a_rule_per_signature() -> None:
    rule = check(table_of_functions, 0.3, -1.5)[0]
    for x in (-0.4, 2.0):
        check(table_of_functions, x, 0.5, rule=rule)
