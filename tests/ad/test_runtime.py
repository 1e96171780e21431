"""The runtime pieces of derived rules: the tape, adjoint sums, dynamic call sites."""

from __future__ import annotations

import numpy as np
import pytest

import gibbous
from gibbous.tangents.model import accum
from gibbous.tangents.model import zero_coduals
from gibbous.tangents.model import NO_TANGENT, Tangent
from tests.ad.conftest import check


def _loop(x: float, n: int) -> float:
    s = 0.0
    for _ in range(n):
        s = s * x + 1.0
    return s


def test_tape_keeps_its_list_and_drops_references() -> None:
    rule = gibbous.build_rrule(_loop, 0.5, 3)
    f, x, n = zero_coduals(_loop, 0.5, 3)
    _, pb1 = rule(f, x, n)
    pushed = len(rule.tape)
    items = rule.tape.items
    _, pb2 = rule(f, x, n)  # fwd, fwd: the second call's entries go on top
    assert len(rule.tape) == 2 * pushed and rule.tape.items is items
    pb2(1.0)
    assert len(rule.tape) == pushed and all(v is None for v in items[pushed:])
    pb1(1.0)
    assert len(rule.tape) == 0 and all(v is None for v in items)
    length = len(items)
    rule(f, x, n)  # a warm pass stores into the list it has: no growth
    assert rule.tape.items is items and len(items) == length
    rule.reset()  # frees the list: a reset follows abandoned calls, which may have grown it
    assert len(rule.tape) == 0 and rule.tape.items is items and items == []


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
