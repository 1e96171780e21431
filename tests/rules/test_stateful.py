"""Stateful rules (gibbous.rules.stateful) and the in-place rules built on them
(gibbous.rules.inplace): gradients against finite differences, restoration of overwritten
arguments, the stack of states (repeated calls, recursion, shape changes, exceptions), and
allocations of warm calls."""

from __future__ import annotations

import operator
import tracemalloc
import typing as t

import attrs
import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.rules.inplace import KEYWORD_OUT_ONLY, ElementwiseState, MatmulState, matmul_out
from gibbous.rules.registry import DefaultContext, Pullback, RRule, build_primitive_rrule
from gibbous.rules.stateful import PullbackOrderError, StatefulRRule, plain_rrule
from gibbous.tangents.model import CoDual, NoTangent, zero_coduals
from tests.rules import fd

NT = NoTangent()
_CD = CoDual[t.Any, t.Any]


# --------------------------------------------------------------------------------------------
# Harness: one call of a rule on arguments given in IR operand order


@attrs.frozen
class Case:
    """``fn(*args)`` with the last ``len(kwnames)`` arguments passed by keyword."""

    fn: t.Callable[..., t.Any]
    args: tuple[t.Any, ...]
    kwnames: tuple[str, ...] = ()

    def split(self, values: t.Sequence[t.Any]) -> tuple[list[t.Any], dict[str, t.Any]]:
        n = len(values) - len(self.kwnames)
        return list(values[:n]), dict(zip(self.kwnames, values[n:]))

    def primal(self, *values: t.Any) -> t.Any:
        args, kwargs = self.split(values)
        return self.fn(*args, **kwargs)

    def forward(self, rule: RRule, coduals: t.Sequence[_CD]) -> tuple[_CD, Pullback]:
        args, kwargs = self.split(coduals)
        return rule(CoDual(self.fn, NT), *args, **kwargs)

    def build(self) -> RRule:
        types = [T.typeof(v) for v in self.args]
        return build_primitive_rrule(DefaultContext, self.fn, types, self.kwnames, debug=True)

    def __str__(self) -> str:
        def show(v: object) -> str:
            return f"{T.typeof(v)}{getattr(v, 'shape', '')}"

        return f"{getattr(self.fn, '__name__', self.fn)}({', '.join(map(show, self.args))})"


def unique_arrays(values: t.Sequence[object]) -> dict[int, int]:
    """id -> first position, for the array arguments."""
    found: dict[int, int] = {}
    for i, v in enumerate(values):
        if isinstance(v, np.ndarray):
            found.setdefault(id(v), i)
    return found


def check_rule(case: Case, rule: RRule, rng: np.random.Generator) -> None:
    """Forward, seed, reverse; check restoration and the gradient of
    ``L = sum over array arguments m of <W_m, m after the call>`` against finite differences.

    Fdata starts random and non-zero: a pullback that overwrote fdata instead of adding into
    it would lose that start and fail.
    """
    args = case.args
    coduals = zero_coduals(*args)
    arrays = unique_arrays(args)
    for i in arrays.values():
        coduals[i].fdata[...] = rng.standard_normal(args[i].shape)
    start_fdata = {k: coduals[i].fdata.copy() for k, i in arrays.items()}
    start_primal = {k: args[i].copy() for k, i in arrays.items()}
    fdata_objects = [c.fdata for c in coduals]

    y, pullback = case.forward(rule, coduals)
    assert any(y is c for c in coduals)  # the result is the overwritten argument itself
    weights = {k: rng.standard_normal(args[i].shape) for k, i in arrays.items()}
    for k, i in arrays.items():
        coduals[i].fdata[...] += weights[k]
    rdata = pullback(NT)

    assert len(rdata) == 1 + len(args) and rdata[0] is NT
    for k, i in arrays.items():  # restored: same objects, same values
        assert coduals[i].primal is args[i]
        np.testing.assert_array_equal(args[i], start_primal[k])
    assert all(c.fdata is f for c, f in zip(coduals, fdata_objects))

    grads: list[t.Any] = []
    for i, v in enumerate(args):
        if isinstance(v, np.ndarray):
            grads.append(coduals[i].fdata - start_fdata[id(v)])
            assert rdata[1 + i] is NT
        elif isinstance(v, float):
            assert type(rdata[1 + i]) is type(v)
            grads.append(rdata[1 + i])
        else:
            assert rdata[1 + i] is NT
            grads.append(NT)

    positions = list(arrays.values())

    def loss(*values: t.Any) -> float:
        case.primal(*values)
        return sum(float(np.vdot(weights[id(args[i])], values[i])) for i in positions)

    fd.check_gradient(loss, args, grads, rng)


# --------------------------------------------------------------------------------------------
# Cases


def arr(rng: np.random.Generator, *shape: int, dtype: str = "float64") -> np.ndarray:
    # Away from zero, so that division is smooth at the step sizes used.
    values = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return t.cast(np.ndarray, values.astype(dtype))


def matmul_cases(rng: np.random.Generator) -> list[Case]:
    A, B, C = arr(rng, 3, 4), arr(rng, 4, 5), arr(rng, 3, 5)
    S, R = arr(rng, 4, 4), arr(rng, 4, 4)
    F = np.asfortranarray(arr(rng, 4, 3))
    return [
        Case(np.matmul, (A, B, C), ("out",)),
        Case(np.matmul, (A, B, C)),  # out passed by position
        Case(np.matmul, (S, R, S), ("out",)),  # the output is the first input
        Case(np.matmul, (S, R, R), ("out",)),  # ... the second
        Case(np.matmul, (S, S, S), ("out",)),  # ... both
        Case(np.matmul, (F, arr(rng, 5, 3).T, arr(rng, 4, 5)[:, ::-1]), ("out",)),
    ]


UFUNCS: list[np.ufunc] = [np.add, np.subtract, np.multiply, np.divide]


def ufunc_cases(rng: np.random.Generator, ufunc: np.ufunc) -> list[Case]:
    x, y, z = arr(rng, 3, 4), arr(rng, 3, 4), arr(rng, 3, 4)
    out = ("out",)
    return [
        Case(ufunc, (x, y, z), out),
        Case(ufunc, (x, arr(rng, 4), arr(rng, 3, 4)), out),  # y broadcast along axis 0
        Case(ufunc, (arr(rng, 3, 1), arr(rng, 1, 4), arr(rng, 3, 4)), out),  # both
        Case(ufunc, (arr(rng, 4), arr(rng, 4), arr(rng, 2, 4)), out),  # out larger still
        Case(ufunc, (1.7, arr(rng, 3, 4), arr(rng, 3, 4)), out),  # a float: rdata
        Case(ufunc, (arr(rng, 3, 4), -0.6, arr(rng, 3, 4)), out),
        Case(ufunc, (arr(rng, 3, 4), 3, arr(rng, 3, 4)), out),  # an int: no gradient
        Case(ufunc, (x, y, x), out),  # the output is an input
        Case(ufunc, (x, y, y), out),
        Case(ufunc, (x, x, z), out),  # one array twice
        Case(ufunc, (x, x, x), out),
        Case(ufunc, (x, y, z)),  # out passed by position
    ]


IN_PLACE = [operator.iadd, operator.isub, operator.imul, operator.itruediv]


def in_place_cases(rng: np.random.Generator, op: t.Callable[..., t.Any]) -> list[Case]:
    a = arr(rng, 3, 4)
    return [
        Case(op, (a, arr(rng, 3, 4))),
        Case(op, (arr(rng, 3, 4), arr(rng, 4))),
        Case(op, (arr(rng, 2, 3, 4), arr(rng, 3, 1))),
        Case(op, (arr(rng, 3, 4), 1.3)),
        Case(op, (arr(rng, 3, 4), 2)),
        Case(op, (a, a)),  # a += a
        Case(op, (arr(rng, 5, 6)[1:4, ::2], arr(rng, 3, 3))),  # a strided view
    ]


# Unary ufuncs with out= (a few of gibbous.rules.inplace.UNARY_PARTIALS; the audit's cases
# cover them all), on positive values, where each is smooth.
UNARY_OUT: list[np.ufunc] = [
    np.exp, np.sin, np.sqrt, np.log1p, np.tanh, np.absolute, np.reciprocal,
]  # fmt: skip


def unary_out_cases(rng: np.random.Generator, ufunc: np.ufunc) -> list[Case]:
    x, z = np.abs(arr(rng, 3, 4)), arr(rng, 3, 4)
    out = ("out",)
    return [
        Case(ufunc, (x, z), out),
        Case(ufunc, (x, x), out),  # np.exp(x, out=x)
        Case(ufunc, (np.abs(arr(rng, 4)), arr(rng, 3, 4)), out),  # x broadcast to out
        Case(ufunc, (x, z)),  # out passed by position
    ]


# Binary ufuncs beyond the four arithmetic ones.  Positive operands: the power's base, and
# the remainder's (whose divisor is near 0.7, so that no quotient is near an integer).
BINARY_OUT: list[np.ufunc] = [
    np.power, np.maximum, np.minimum, np.arctan2, np.hypot, np.logaddexp, np.remainder,
]  # fmt: skip


def binary_out_cases(rng: np.random.Generator, ufunc: np.ufunc) -> list[Case]:
    def first(*shape: int) -> np.ndarray:
        if ufunc is np.remainder:
            return 0.7 * (rng.integers(0, 3, shape) + rng.uniform(0.25, 0.75, shape))
        return np.abs(arr(rng, *shape)) if ufunc is np.power else arr(rng, *shape)

    def second(*shape: int) -> np.ndarray:
        if ufunc is np.remainder:
            return 0.7 + rng.uniform(-0.01, 0.01, shape)
        return arr(rng, *shape)

    x, y = first(3, 4), second(3, 4)
    out = ("out",)
    return [
        Case(ufunc, (x, y, arr(rng, 3, 4)), out),
        Case(ufunc, (first(3, 1), second(1, 4), arr(rng, 3, 4)), out),
        Case(ufunc, (x, float(second()), arr(rng, 3, 4)), out),  # a float: rdata
        Case(ufunc, (float(first()), y, arr(rng, 3, 4)), out),
        Case(ufunc, (x, 2, arr(rng, 3, 4)), out),  # an int: no gradient
        Case(ufunc, (x, y, x), out),  # the output is an input
        Case(ufunc, (x, y, y), out),
    ] + ([] if ufunc in KEYWORD_OUT_ONLY else [Case(ufunc, (x, y, arr(rng, 3, 4)))])  # by position


def all_cases() -> list[Case]:
    rng = np.random.default_rng(2024)
    cases = matmul_cases(rng)
    for ufunc in UFUNCS:
        cases += ufunc_cases(rng, ufunc)
    for op in IN_PLACE:
        cases += in_place_cases(rng, op)
    for ufunc in UNARY_OUT:
        cases += unary_out_cases(rng, ufunc)
    for ufunc in BINARY_OUT:
        cases += binary_out_cases(rng, ufunc)
    a = np.abs(arr(rng, 3, 4))
    cases += [  # a **= b on positive bases; a **= 2, a **= 3 on bases of either sign
        Case(operator.ipow, (a, arr(rng, 3, 4))),
        Case(operator.ipow, (np.abs(arr(rng, 3, 4)), arr(rng, 4))),
        Case(operator.ipow, (np.abs(arr(rng, 3, 4)), 0.5)),
        Case(operator.ipow, (arr(rng, 3, 4), 2)),
        Case(operator.ipow, (arr(rng, 2, 3, 4), 3)),
        Case(operator.ipow, (a, a)),
        Case(operator.imod, (0.7 * (2 + rng.uniform(0.25, 0.75, (3, 4))), 0.7)),
        # No derivative, but the output is overwritten and must be restored.
        Case(operator.ifloordiv, (0.7 * (2 + rng.uniform(0.25, 0.75, (3, 4))), 0.7)),
        Case(np.floor, (a + 0.1, arr(rng, 3, 4)), ("out",)),
        Case(np.rint, (a + 0.1, a + 0.1), ("out",)),
    ]
    return cases


CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradients_and_restoration(case: Case) -> None:
    rng = np.random.default_rng(7)
    rule = case.build()
    assert isinstance(rule, StatefulRRule)
    check_rule(case, rule, rng)  # first call: state None
    check_rule(case, rule, rng)  # warm call: state reused
    check_rule(case, plain_rrule(rule.rule), rng)  # the same function, stateless
    assert rule.depth == 0


def test_float32_matches_float64() -> None:
    rng = np.random.default_rng(3)
    for case in (matmul_cases(rng)[0], ufunc_cases(rng, np.divide)[1]):
        single = Case(
            case.fn,
            tuple(v.astype("float32") if isinstance(v, np.ndarray) else v for v in case.args),
            case.kwnames,
        )
        results = []
        for c in (case, single):
            coduals = zero_coduals(*c.args)
            y, pullback = c.forward(c.build(), coduals)
            value = y.primal.astype("float64")
            y.fdata[...] = 1.0
            pullback(NT)
            results.append((value, [x.fdata.astype("float64") for x in coduals[:2]]))
        (v64, g64), (v32, g32) = results
        np.testing.assert_allclose(v32, v64, rtol=1e-5)
        for a, b in zip(g32, g64):
            np.testing.assert_allclose(a, b, rtol=1e-4)


def test_an_overwritten_output_gets_its_fdata_back_exactly() -> None:
    rng = np.random.default_rng(0)
    A, B, C = arr(rng, 3, 4), arr(rng, 4, 5), arr(rng, 3, 5)
    a, b, c = zero_coduals(A, B, C)
    c.fdata[...] = rng.standard_normal(C.shape)
    before, before_fdata = C.copy(), c.fdata.copy()
    rule = build_primitive_rrule(DefaultContext, np.matmul, [T.typeof(A)] * 3, ["out"])
    y, pullback = rule(CoDual(np.matmul, NT), a, b, out=c)
    assert y is c and np.allclose(C, A @ B) and not np.any(c.fdata)  # the tangent starts fresh
    c.fdata[...] = 1.0
    pullback(NT)
    np.testing.assert_array_equal(C, before)
    np.testing.assert_array_equal(c.fdata, before_fdata)
    np.testing.assert_allclose(a.fdata, np.ones((3, 5)) @ B.T)


# --------------------------------------------------------------------------------------------
# The stack of states


def iadd_site() -> StatefulRRule[t.Any]:
    rule = build_primitive_rrule(DefaultContext, operator.iadd, [T.Array("float64", 2)] * 2)
    assert isinstance(rule, StatefulRRule)
    return rule


def run_program(
    rules: t.Sequence[RRule], a: np.ndarray, b: np.ndarray, fa: np.ndarray, seed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``a += b; a += a`` (the second call reads the first one's output), one rule per call;
    returns a, b and their fdata after forward + reverse."""
    ca, cb = zero_coduals(a, b)
    ca.fdata[...] = fa
    f = CoDual(operator.iadd, NT)
    _, pb1 = rules[0](f, ca, cb)
    _, pb2 = rules[1](f, ca, ca)
    ca.fdata[...] += seed
    pb2(NT)
    pb1(NT)
    return a, b, ca.fdata, cb.fdata


def test_repeated_forward_calls_before_any_pullback() -> None:
    rng = np.random.default_rng(1)
    a, b, fa, seed = (arr(rng, 3, 4) for _ in range(4))
    site = iadd_site()
    one_site = run_program([site, site], a.copy(), b.copy(), fa, seed)
    assert site.depth == 0 and len(site.states) == 2
    assert site.states[0] is not site.states[1]
    two_sites = run_program([iadd_site(), iadd_site()], a.copy(), b.copy(), fa, seed)
    for x, y in zip(one_site, two_sites):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(one_site[0], a)  # a restored
    # and right: L = <seed, 2 (a + b)>, so dL/da = dL/db = 2 seed, on top of fa
    np.testing.assert_allclose(one_site[2], fa + 2 * seed)
    np.testing.assert_allclose(one_site[3], 2 * seed)
    # A second round reuses both states.
    states = site.states
    run_program([site, site], a.copy(), b.copy(), fa, seed)
    assert all(s is t for s, t in zip(site.states, states))


def test_recursion_through_a_program() -> None:
    rng = np.random.default_rng(2)
    rule = build_primitive_rrule(DefaultContext, operator.imul, [T.Array("float64", 1)] * 2)
    assert isinstance(rule, StatefulRRule)
    a, b = arr(rng, 5), arr(rng, 5)
    ca, cb = zero_coduals(a, b)
    start = a.copy()

    def power(n: int, pullbacks: list[Pullback]) -> None:  # a *= b, n times, recursively
        _, pullback = rule(CoDual(operator.imul, NT), ca, cb)
        pullbacks.append(pullback)
        assert rule.depth == len(pullbacks)
        if n > 1:
            power(n - 1, pullbacks)

    pullbacks: list[Pullback] = []
    power(4, pullbacks)
    np.testing.assert_allclose(a, start * b**4)
    ca.fdata[...] = 1.0
    for pullback in reversed(pullbacks):
        pullback(NT)
    assert rule.depth == 0 and len(rule.states) == 4
    np.testing.assert_array_equal(a, start)
    np.testing.assert_allclose(ca.fdata, b**4)
    np.testing.assert_allclose(cb.fdata, 4 * start * b**3)


@attrs.frozen
class DoubleState:
    primal: np.ndarray
    fdata: np.ndarray


SITE: list[StatefulRRule[DoubleState]] = []


def double_nested(
    state: DoubleState | None, f: _CD, x: _CD, n: int
) -> tuple[_CD, Pullback, DoubleState]:
    """``x *= 2`` then, for n > 0, this same call site again on x with n - 1: a rule that
    re-enters its own StatefulRRule (as a rule calling back into AD may)."""
    if state is None or state.primal.shape != x.primal.shape:
        state = DoubleState(np.empty_like(x.primal), np.empty_like(x.primal))
    saved = state
    np.copyto(saved.primal, x.primal)
    np.copyto(saved.fdata, x.fdata)
    np.multiply(x.primal, 2, out=x.primal)
    x.fdata.fill(0)
    inner = SITE[0](f, x, n - 1)[1] if n > 0 else None

    def pullback(dy: object) -> tuple[t.Any, ...]:
        if inner is not None:
            inner(dy)
        np.copyto(x.primal, saved.primal)
        np.multiply(x.fdata, 2, out=x.fdata)
        np.add(x.fdata, saved.fdata, out=x.fdata)
        return (NT, NT, NT)

    return x, pullback, state


def test_recursion_inside_a_rule() -> None:
    SITE[:] = [StatefulRRule(double_nested, DoubleState, debug=True)]
    site = SITE[0]
    x = np.arange(1.0, 4.0)
    (cx,) = zero_coduals(x)
    cx.fdata[...] = 0.5
    _, pullback = site(CoDual(double_nested, NT), cx, 3)
    np.testing.assert_array_equal(x, np.arange(1.0, 4.0) * 16)
    assert site.depth == 4
    # Each depth has its own state: the outer call's saved value survived the inner calls.
    assert len({id(s) for s in site.states}) == 4
    cx.fdata[...] = 1.0
    pullback(NT)
    assert site.depth == 0
    np.testing.assert_array_equal(x, np.arange(1.0, 4.0))
    np.testing.assert_array_equal(cx.fdata, 0.5 + 16)


def test_first_call_gets_none_then_its_own_state() -> None:
    received: list[MatmulState | None] = []

    def recording(state: MatmulState | None, *args: t.Any, **kwargs: t.Any) -> t.Any:
        received.append(state)
        return matmul_out(state, *args, **kwargs)

    rule = StatefulRRule(recording, MatmulState, debug=True)
    rng = np.random.default_rng(4)
    case = Case(np.matmul, (arr(rng, 3, 4), arr(rng, 4, 5), arr(rng, 3, 5)), ("out",))
    check_rule(case, rule, rng)
    first = rule.states[0]
    assert received == [None] and isinstance(first, MatmulState)
    check_rule(case, rule, rng)
    warm = rule.states[0]
    assert isinstance(warm, MatmulState)
    assert received[1] is first and warm is first  # warm: the same state, the same buffers
    assert warm.saved.primal is first.saved.primal and warm.grad_a is first.grad_a


def test_shape_changes_reallocate() -> None:
    rng = np.random.default_rng(5)
    rule = iadd_site()
    small = Case(operator.iadd, (arr(rng, 3, 4), arr(rng, 4)))
    large = Case(operator.iadd, (arr(rng, 6, 2), arr(rng, 6, 2)))
    check_rule(small, rule, rng)
    first = rule.states[0]
    check_rule(large, rule, rng)
    second = rule.states[0]
    assert isinstance(second, ElementwiseState) and second is not first
    assert second.saved.primal.shape == (6, 2) and second.scratch is None
    check_rule(large, rule, rng)
    assert rule.states[0] is second
    check_rule(small, rule, rng)
    assert rule.states[0].saved.primal.shape == (3, 4)

    mm = build_primitive_rrule(DefaultContext, np.matmul, [T.Array("float64", 2)] * 3, ["out"])
    for shape in [(2, 3, 4), (5, 1, 2), (2, 3, 4)]:
        n, k, m = shape
        check_rule(
            Case(np.matmul, (arr(rng, n, k), arr(rng, k, m), arr(rng, n, m)), ("out",)), mm, rng
        )
        assert isinstance(mm, StatefulRRule)
        state = mm.states[0]
        assert isinstance(state, MatmulState) and state.grad_a.shape == (n, k)


def test_an_exception_in_the_forward_pass_leaves_the_rule_usable() -> None:
    rng = np.random.default_rng(6)
    rule = build_primitive_rrule(DefaultContext, np.matmul, [T.Array("float64", 2)] * 3, ["out"])
    assert isinstance(rule, StatefulRRule)
    good = Case(np.matmul, (arr(rng, 3, 4), arr(rng, 4, 5), arr(rng, 3, 5)), ("out",))
    check_rule(good, rule, rng)
    A, B, C = arr(rng, 3, 4), arr(rng, 3, 5), arr(rng, 3, 5)  # B has the wrong shape
    coduals = zero_coduals(A, B, C)
    before = C.copy()
    with pytest.raises(ValueError):
        Case(np.matmul, (A, B, C), ("out",)).forward(rule, coduals)
    assert rule.depth == 0
    np.testing.assert_array_equal(C, before)
    assert not np.any(coduals[2].fdata)
    check_rule(good, rule, rng)

    # With a call pending: the failed call gives its depth back, the pending one is unharmed.
    site = iadd_site()
    a, b = arr(rng, 3, 4), arr(rng, 3, 4)
    ca, cb = zero_coduals(a, b)
    start = a.copy()
    _, pullback = site(CoDual(operator.iadd, NT), ca, cb)
    with pytest.raises(ValueError, match="does not broadcast"):
        site(CoDual(operator.iadd, NT), ca, CoDual(arr(rng, 2, 4), NT))
    assert site.depth == 1
    ca.fdata[...] = 1.0
    pullback(NT)
    assert site.depth == 0
    np.testing.assert_array_equal(a, start)
    np.testing.assert_array_equal(cb.fdata, 1.0)
    check_rule(Case(operator.iadd, (a, b)), site, rng)


def test_an_exception_in_a_pullback_gives_the_depth_back() -> None:
    calls: list[str] = []

    def fragile(state: object, f: _CD, x: _CD) -> tuple[_CD, Pullback, object]:
        def pullback(dy: object) -> tuple[t.Any, ...]:
            calls.append("pb")
            if dy == "fail":
                raise RuntimeError("boom")
            return (NT, NT)

        return x, pullback, state or object()

    rule = StatefulRRule(fragile, object)
    x = CoDual(1.0, NT)
    _, pb = rule(CoDual(fragile, NT), x)
    with pytest.raises(RuntimeError):
        pb("fail")
    assert rule.depth == 0
    _, pb = rule(CoDual(fragile, NT), x)
    assert pb(None) == (NT, NT) and rule.depth == 0


def test_pullbacks_must_run_last_in_first_out() -> None:
    site = iadd_site()
    a, b = np.ones((2, 2)), np.ones((2, 2))
    ca, cb = zero_coduals(a, b)
    f = CoDual(operator.iadd, NT)
    _, first = site(f, ca, cb)
    site(f, ca, cb)  # its pullback should run before the first's
    with pytest.raises(PullbackOrderError, match="reverse order"):
        first(NT)
    site.reset()
    _, pb = site(f, ca, cb)
    pb(NT)
    with pytest.raises(PullbackOrderError, match="twice"):
        pb(NT)
    _, pb = site(f, ca, cb)
    site.reset()
    with pytest.raises(PullbackOrderError, match="after reset"):
        pb(NT)


def test_debug_checks_what_a_stateful_rule_returns() -> None:
    def wrong_state(state: object, f: _CD, x: _CD) -> tuple[_CD, Pullback, object]:
        return x, lambda dy: (NT, NT), "not a MatmulState"

    def wrong_result(state: object, f: _CD, x: _CD) -> tuple[object, Pullback, MatmulState]:
        return 1.0, lambda dy: (NT, NT), t.cast(MatmulState, None)

    x = CoDual(1.0, NT)
    with pytest.raises(TypeError, match="not MatmulState"):
        StatefulRRule(wrong_state, MatmulState, debug=True)(CoDual(wrong_state, NT), x)
    with pytest.raises(TypeError, match="not a CoDual"):
        StatefulRRule(wrong_result, MatmulState, debug=True)(  # type: ignore[arg-type]
            CoDual(wrong_result, NT), x
        )
    StatefulRRule(wrong_state, MatmulState)(CoDual(wrong_state, NT), x)  # unchecked


# --------------------------------------------------------------------------------------------
# Allocations
#
# tracemalloc keeps only live allocations in snapshots, so two measurements:
# * ``held``: NumPy-domain memory (DomainFilter on np.lib.tracemalloc_domain) allocated during
#   the forward call and still alive before the pullback, and still alive after it;
# * ``peak``: the most traced memory (all domains) in use at once during forward + reverse,
#   above the start.  Temporaries freed before the end show only here; what our Python
#   objects (closures, tuples) take is about a kilobyte, far below any of the arrays used.

NUMPY = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
PYTHON_OBJECTS = 4096  # bytes: generous for the rule's closures and tuples, under any array


def _numpy_live() -> int:
    snapshot = tracemalloc.take_snapshot().filter_traces(NUMPY)
    return sum(stat.size for stat in snapshot.statistics("filename"))


@attrs.frozen
class Allocations:
    peak: int
    held_after_forward: int
    held_after_reverse: int


def measure(forward: t.Callable[[], Pullback | None]) -> Allocations:
    for _ in range(2):  # warm up: the states are allocated here
        pullback = forward()
        if pullback is not None:
            pullback(NT)
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        pullback = forward()
        if pullback is not None:
            pullback(NT)
        peak = tracemalloc.get_traced_memory()[1] - start
        del pullback
        base = _numpy_live()
        pullback = forward()
        held_forward = _numpy_live() - base
        if pullback is not None:
            pullback(NT)
        del pullback
        held_reverse = _numpy_live() - base
    finally:
        tracemalloc.stop()
    return Allocations(peak, held_forward, held_reverse)


def round_trip(rule: RRule, case: Case, coduals: t.Sequence[_CD]) -> t.Callable[[], Pullback]:
    return lambda: case.forward(rule, coduals)[1]


def allocation_table(case: Case) -> dict[str, Allocations]:
    coduals = zero_coduals(*case.args)
    stateful = case.build()
    assert isinstance(stateful, StatefulRRule)

    def primal() -> None:
        case.primal(*case.args)

    return {
        "primal": measure(primal),
        "stateful": measure(round_trip(stateful, case, coduals)),
        "plain": measure(round_trip(plain_rrule(stateful.rule), case, coduals)),
    }


def _matmul_case() -> Case:
    rng = np.random.default_rng(8)
    return Case(np.matmul, (arr(rng, 64, 48), arr(rng, 48, 32), arr(rng, 64, 32)), ("out",))


def _iadd_case() -> Case:
    rng = np.random.default_rng(9)
    return Case(operator.iadd, (arr(rng, 100, 50), arr(rng, 100, 50)))


def _sin_out_case() -> Case:  # np.sin(x, out=x): the seed's point, a unary ufunc in place
    rng = np.random.default_rng(11)
    x = arr(rng, 100, 50)
    return Case(np.sin, (x, x), ("out",))


def _ipow_case() -> Case:  # a **= b, whose partials need the state's work buffers
    rng = np.random.default_rng(12)
    return Case(operator.ipow, (np.abs(arr(rng, 100, 50)), arr(rng, 100, 50)))


def _maximum_out_case() -> Case:
    rng = np.random.default_rng(13)
    return Case(np.maximum, (arr(rng, 100, 50), arr(rng, 100, 50), arr(rng, 100, 50)), ("out",))


@pytest.mark.parametrize(
    "make",
    [_matmul_case, _iadd_case, _sin_out_case, _ipow_case, _maximum_out_case],
    ids=["matmul_out", "iadd", "sin_out", "ipow", "maximum_out"],
)
def test_warm_calls_allocate_no_numpy_memory(make: t.Callable[[], Case]) -> None:
    case = make()
    table = allocation_table(case)
    primal, stateful, plain = table["primal"], table["stateful"], table["plain"]
    out_bytes = case.args[-1].nbytes if case.kwnames else case.args[0].nbytes
    assert primal.peak < PYTHON_OBJECTS and primal.held_after_forward == 0
    assert stateful.held_after_forward == 0 and stateful.held_after_reverse == 0
    assert stateful.peak < PYTHON_OBJECTS, table
    # The plain rule keeps fresh copies of the output (primal and fdata) until its pullback.
    assert plain.held_after_forward >= 2 * out_bytes and plain.held_after_reverse == 0
    assert plain.peak >= 2 * out_bytes


def test_broadcasting_allocates_no_more_than_the_primal() -> None:
    # NumPy itself buffers a broadcast operand; the rule adds nothing to that.
    rng = np.random.default_rng(10)
    case = Case(operator.iadd, (arr(rng, 100, 50), arr(rng, 50)))
    table = allocation_table(case)
    assert table["stateful"].held_after_forward == 0
    assert table["stateful"].peak < table["primal"].peak + PYTHON_OBJECTS, table


# --------------------------------------------------------------------------------------------
# Operands without a derivative, singular points


def test_an_inactive_array_operand_is_a_constant() -> None:
    """The AD pass gives an array no derivative flows through ``NoTangent()`` fdata."""
    rng = np.random.default_rng(14)
    x, c, z = np.abs(arr(rng, 3, 4)), arr(rng, 4), arr(rng, 3, 4)
    calls: list[tuple[t.Callable[..., t.Any], tuple[str, ...]]] = [
        (np.power, ("out",)),
        (operator.imul, ()),
    ]
    for fn, kwnames in calls:
        types = [T.typeof(v) for v in ((x, c, z) if kwnames else (x, c))]
        rule = build_primitive_rrule(DefaultContext, fn, types, kwnames)
        cx, cz = zero_coduals(x, z)
        cc = CoDual(c, NT)
        target = cz if kwnames else cx
        start = target.primal.copy()
        y, pullback = Case(fn, (x, c, z)[: len(types)], kwnames).forward(
            rule, [cx, cc, cz][: len(types)]
        )
        assert y is target
        target.fdata[...] = 1.0
        rdata = pullback(NT)
        assert all(r is NT for r in rdata)
        np.testing.assert_array_equal(target.primal, start)
        expected = c * x ** (c - 1) if kwnames else np.broadcast_to(c, x.shape)
        np.testing.assert_allclose(cx.fdata, expected)  # d(x ** c)/dx, d(x * c)/dx


def test_power_at_zero_gives_finite_gradients_without_warnings() -> None:
    x, y = np.array([0.0, 0.0, 2.0, -1.5]), np.array([0.0, 2.0, 0.0, 3.0])
    z = np.empty(4)
    rule = build_primitive_rrule(DefaultContext, np.power, [T.typeof(x)] * 3, ["out"])
    cx, cy, cz = zero_coduals(x, y, z)
    with np.errstate(all="raise"):
        _, pullback = rule(CoDual(np.power, NT), cx, cy, out=cz)
        cz.fdata[...] = 1.0
        pullback(NT)
    # d/dx: y x**(y-1), 0 where y == 0; d/dy: x**y log|x|, 0 where x == 0
    np.testing.assert_allclose(cx.fdata, [0.0, 0.0, 0.0, 3 * 1.5**2])
    np.testing.assert_allclose(cy.fdata, [0.0, 0.0, np.log(2.0), -(1.5**3) * np.log(1.5)])


def test_complex_in_place_products_conjugate() -> None:
    """z *= w on complex arrays: with cotangent g of the new z, z's gradient is g conj(w) and
    w's is g conj(z) (docs/tangents.md); a real scalar factor gets the real part."""
    rng = np.random.default_rng(15)
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    w = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    g = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    start = z.copy()
    rule = build_primitive_rrule(DefaultContext, operator.imul, [T.typeof(z)] * 2)
    cz, cw = zero_coduals(z, w)
    y, pullback = rule(CoDual(operator.imul, NT), cz, cw)
    assert y is cz
    np.testing.assert_allclose(z, start * w)
    cz.fdata[...] = g
    pullback(NT)
    np.testing.assert_array_equal(z, start)
    np.testing.assert_allclose(cz.fdata, g * np.conj(w))
    np.testing.assert_allclose(cw.fdata, g * np.conj(start))

    rule = build_primitive_rrule(DefaultContext, operator.imul, [T.typeof(z), T.typeof(1.5)])
    (cz,) = zero_coduals(z)
    _, pullback = rule(CoDual(operator.imul, NT), cz, CoDual(1.5, NT))
    cz.fdata[...] = g
    _, _, ds = pullback(NT)
    assert type(ds) is float and np.isclose(ds, np.vdot(start, g).real)
