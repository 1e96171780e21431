"""gibbous.testing: the rule test harness passes correct rules (the in-place rules of
gibbous.rules.inplace among them, with perf="allocs") and catches each of a set of deliberately
wrong rules with the right check."""

from __future__ import annotations

import importlib.util
import operator
import typing as t

import attrs
import numpy as np
import pytest

from gibbous import testing
from gibbous.rules import inplace  # noqa: F401  (registers the in-place rules)
from gibbous.rules.registry import Context, DefaultContext, primitive, stateful_primitive
from gibbous.rules.stateful import StatefulRRule
from gibbous.tangents.model import NO_TANGENT, CoDual, zero_fdatas
from gibbous.testing.memory import Copier, inner, memory_span

NT = NO_TANGENT
CD = CoDual[t.Any, t.Any]
SELF_TEST = Context("SelfTestContext", parent=DefaultContext)


def arr(rng: np.random.Generator, *shape: int, dtype: str = "float64") -> np.ndarray:
    # Away from zero, so that division is smooth at the step sizes used.
    values = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return t.cast(np.ndarray, values.astype(dtype))


def caught(f: t.Any, *args: t.Any, **options: t.Any) -> testing.RuleTestError:
    with pytest.raises(testing.RuleTestError) as info:
        testing.test_rule(f, *args, **options)
    return info.value


# --------------------------------------------------------------------------------------------
# Rules, right and wrong
#
# scale(x, s) = s x: a new array.


def scale(x: np.ndarray, s: float) -> np.ndarray:
    return s * x


@primitive(scale, "f64[:]", "f64", ctx=SELF_TEST)
def scale_rrule(f: CD, x: CD, s: CD) -> t.Any:
    y = s.primal * x.primal
    dy = np.zeros_like(y)

    def pullback(_: object) -> tuple[t.Any, ...]:
        np.add(x.fdata, dy * s.primal, out=x.fdata)
        return NT, NT, float(np.dot(dy, x.primal))

    return CoDual(y, dy), pullback


def scale_overwrites_fdata(f: CD, x: CD, s: CD) -> t.Any:
    y = s.primal * x.primal
    dy = np.zeros_like(y)

    def pullback(_: object) -> tuple[t.Any, ...]:
        x.fdata[...] = dy * s.primal  # WRONG: must add into x.fdata
        return NT, NT, float(np.dot(dy, x.primal))

    return CoDual(y, dy), pullback


def scale_too_few_rdata(f: CD, x: CD, s: CD) -> t.Any:
    y, pullback = scale_rrule(f, x, s)
    return y, lambda dy: pullback(dy)[1:]  # WRONG: no rdata for the callee


def scale_float32_fdata(f: CD, x: CD, s: CD) -> t.Any:
    y, pullback = scale_rrule(f, x, s)
    return CoDual(y.primal, y.fdata.astype(np.float32)), pullback  # WRONG: fdata dtype


def sine(x: np.ndarray) -> np.ndarray:
    return t.cast(np.ndarray, np.sin(x))


def sine_twice_the_gradient(f: CD, x: CD) -> t.Any:
    y = np.sin(x.primal)
    dy = np.zeros_like(y)

    def pullback(_: object) -> tuple[t.Any, ...]:
        np.add(x.fdata, 2 * np.cos(x.primal) * dy, out=x.fdata)  # WRONG: a factor 2
        return NT, NT

    return CoDual(y, dy), pullback


def power(x: np.ndarray, n: int) -> np.ndarray:
    return x**n


def power_with_rdata_for_an_int(f: CD, x: CD, n: CD) -> t.Any:
    y = x.primal ** n.primal
    dy = np.zeros_like(y)

    def pullback(_: object) -> tuple[t.Any, ...]:
        np.add(x.fdata, n.primal * x.primal ** (n.primal - 1) * dy, out=x.fdata)
        return NT, NT, 0.0  # WRONG: an int has no rdata

    return CoDual(y, dy), pullback


# first_row(x) = x[0]: a view, whose fdata must be the same view of x's fdata.


def first_row(x: np.ndarray) -> np.ndarray:
    return t.cast(np.ndarray, x[0])


@primitive(first_row, "f64[:,:]", ctx=SELF_TEST)
def first_row_rrule(f: CD, x: CD) -> t.Any:
    return CoDual(x.primal[0], x.fdata[0]), lambda dy: (NT, NT)


def first_row_fresh_fdata(f: CD, x: CD) -> t.Any:
    y = x.primal[0]
    dy = np.zeros_like(y)  # WRONG: a view of x needs the view of x's fdata

    def pullback(_: object) -> tuple[t.Any, ...]:
        np.add(x.fdata[0], dy, out=x.fdata[0])  # (the gradient itself is right)
        return NT, NT

    return CoDual(y, dy), pullback


# scale_into(out, x, s): out[...] = s x, the stateful example of docs/rules.md.


def scale_into(out: np.ndarray, x: np.ndarray, s: float) -> None:
    np.multiply(x, s, out=out)


@attrs.frozen
class ScaleState:
    saved: np.ndarray
    saved_fdata: np.ndarray
    grad: np.ndarray


def _scale_into(
    state: ScaleState,
    out: CD,
    x: CD,
    s: CD,
    *,
    restore: bool = True,
    temporaries: bool = False,
) -> t.Any:
    def pullback(_: object) -> tuple[t.Any, ...]:
        g = out.fdata
        if restore:
            np.copyto(out.primal, state.saved)
        ds = float(np.dot(g, x.primal))
        if temporaries:
            np.copyto(state.grad, g * s.primal)  # allocates g * s
        else:
            np.multiply(g, s.primal, out=state.grad)
        np.copyto(out.fdata, state.saved_fdata)
        np.add(x.fdata, state.grad, out=x.fdata)
        return NT, NT, NT, ds

    np.copyto(state.saved, out.primal)
    np.copyto(state.saved_fdata, out.fdata)
    scale_into(out.primal, x.primal, s.primal)
    out.fdata.fill(0)
    return CoDual(None, NT), pullback, state


def _fresh_state(out: CD) -> ScaleState:
    return ScaleState(*(np.empty_like(out.primal) for _ in range(3)))


def _sized(state: ScaleState | None, out: CD) -> ScaleState:
    """The state if its buffers fit ``out``, else new buffers."""
    if state is not None and state.saved.shape == out.primal.shape:
        return state
    return _fresh_state(out)


@stateful_primitive(scale_into, "f64[:]", "f64[:]", "f64", state_type=ScaleState, ctx=SELF_TEST)
def scale_into_rrule(state: ScaleState | None, f: CD, out: CD, x: CD, s: CD) -> t.Any:
    return _scale_into(_sized(state, out), out, x, s)


def scale_into_forgets_to_restore(
    state: ScaleState | None, f: CD, out: CD, x: CD, s: CD
) -> t.Any:
    state = _sized(state, out)
    return _scale_into(state, out, x, s, restore=False)  # WRONG


SHARED: dict[tuple[int, ...], ScaleState] = {}


def scale_into_shares_state(state: ScaleState | None, f: CD, out: CD, x: CD, s: CD) -> t.Any:
    # WRONG: one set of buffers per shape for every pending call, not the state handed in.
    shared = SHARED.get(out.primal.shape)
    if shared is None:
        shared = SHARED[out.primal.shape] = _fresh_state(out)
    return _scale_into(shared, out, x, s)


def scale_into_allocates(state: ScaleState | None, f: CD, out: CD, x: CD, s: CD) -> t.Any:
    return _scale_into(_fresh_state(out), out, x, s)  # WRONG: new buffers on every call


def scale_into_allocates_temporaries(
    state: ScaleState | None, f: CD, out: CD, x: CD, s: CD
) -> t.Any:
    state = _sized(state, out)
    return _scale_into(state, out, x, s, temporaries=True)  # WRONG: g * s in the pullback


@attrs.define
class Buffers:
    arrays: dict[str, np.ndarray]


def scale_into_reallocates(state: Buffers | None, f: CD, out: CD, x: CD, s: CD) -> t.Any:
    state = state if state is not None else Buffers({})
    state.arrays.clear()  # WRONG: frees the last call's buffers, then allocates new ones
    for name in ("saved", "saved_fdata", "grad"):
        state.arrays[name] = np.empty_like(out.primal)
    y, pullback, _ = _scale_into(ScaleState(**state.arrays), out, x, s)
    return y, pullback, state


def scale_into_ignores_shapes(state: ScaleState | None, f: CD, out: CD, x: CD, s: CD) -> t.Any:
    state = state if state is not None else _fresh_state(out)  # WRONG: never resized
    return _scale_into(state, out, x, s)


def stateful(rule: t.Any) -> StatefulRRule[ScaleState]:
    return StatefulRRule(rule, ScaleState, debug=True)


# set_first(xs, v): xs[0] = v, on a list.


def set_first(xs: list[t.Any], v: t.Any) -> None:
    xs[0] = v


def _set_first(f: CD, xs: CD, v: CD, *, copy_back: bool) -> t.Any:
    old, old_fdata = xs.primal[0], xs.fdata[0]
    xs.primal[0] = v.primal
    # The list's tangent holds the item's whole tangent: an array's fdata, a float's tangent.
    xs.fdata[0] = v.fdata if isinstance(v.primal, np.ndarray) else 0.0

    def pullback(_: object) -> tuple[t.Any, ...]:
        dv = xs.fdata[0] if not isinstance(v.primal, np.ndarray) else NT
        xs.primal[0] = old.copy() if copy_back else old  # WRONG with copy_back: another object
        xs.fdata[0] = old_fdata
        return NT, NT, dv

    return CoDual(None, NT), pullback


@primitive(set_first, "list[any]", "any", ctx=SELF_TEST)
def set_first_rrule(f: CD, xs: CD, v: CD) -> t.Any:
    return _set_first(f, xs, v, copy_back=False)


def set_first_restores_a_copy(f: CD, xs: CD, v: CD) -> t.Any:
    return _set_first(f, xs, v, copy_back=True)


# A callee with a tangent: a closure over an array, and a tuple argument.


def make_weighted(w: np.ndarray) -> t.Callable[[np.ndarray], np.ndarray]:
    def weighted(x: np.ndarray) -> np.ndarray:
        return t.cast(np.ndarray, w * x)

    return weighted


WEIGHTED = make_weighted(np.array([1.5, -0.5, 2.0]))


@primitive(WEIGHTED, "f64[:]", ctx=SELF_TEST)
def weighted_rrule(f: CD, x: CD) -> t.Any:
    w, dw = f.primal.__closure__[0].cell_contents, f.fdata.fields["w"]
    y = w * x.primal
    dy = np.zeros_like(y)

    def pullback(_: object) -> tuple[t.Any, ...]:
        np.add(dw, dy * x.primal, out=dw)
        np.add(x.fdata, dy * w, out=x.fdata)
        return NT, NT

    return CoDual(y, dy), pullback


def scaled_sum(p: tuple[float, np.ndarray]) -> float:
    return p[0] * float(np.sum(p[1]))


@primitive(scaled_sum, "tuple[f64, f64[:]]", ctx=SELF_TEST)
def scaled_sum_rrule(f: CD, p: CD) -> t.Any:
    a, v = p.primal
    dv = p.fdata[1]
    total = float(np.sum(v))

    def pullback(dy: float) -> tuple[t.Any, ...]:
        np.add(dv, a * dy, out=dv)
        return NT, (dy * total, NT)

    return CoDual(a * total, NT), pullback


# Complex numbers: the tangent of a real L is dL/dRe + i dL/dIm (docs/tangents.md), so the
# pullback of w = s z sends w_bar to conj(s) w_bar and sum(conj(z) w_bar).


def cscale(z: np.ndarray, s: complex) -> np.ndarray:
    return s * z


def _cscale(f: CD, z: CD, s: CD, *, conjugate: bool) -> t.Any:
    y = s.primal * z.primal
    dy = np.zeros_like(y)

    def pullback(_: object) -> tuple[t.Any, ...]:
        c = np.conj if conjugate else (lambda v: v)  # WRONG without the conjugates
        np.add(z.fdata, c(s.primal) * dy, out=z.fdata)
        return NT, NT, complex(np.sum(c(z.primal) * dy))

    return CoDual(y, dy), pullback


@primitive(cscale, "c128[:]", "c128", ctx=SELF_TEST)
def cscale_rrule(f: CD, z: CD, s: CD) -> t.Any:
    return _cscale(f, z, s, conjugate=True)


def cscale_without_conjugates(f: CD, z: CD, s: CD) -> t.Any:
    return _cscale(f, z, s, conjugate=False)


# append(xs, v): the list grows, so its tangent must grow with it.


def append(xs: list[t.Any], v: t.Any) -> None:
    xs.append(v)


@primitive(append, "list[any]", "any", ctx=SELF_TEST)
def append_rrule(f: CD, xs: CD, v: CD) -> t.Any:
    xs.primal.append(v.primal)
    xs.fdata.append(v.fdata if isinstance(v.primal, np.ndarray) else 0.0)

    def pullback(_: object) -> tuple[t.Any, ...]:
        xs.primal.pop()
        dv = xs.fdata.pop()
        return NT, NT, NT if isinstance(v.primal, np.ndarray) else dv

    return CoDual(None, NT), pullback


def append_forgets_the_tangent(f: CD, xs: CD, v: CD) -> t.Any:
    xs.primal.append(v.primal)  # WRONG: xs.fdata no longer mirrors xs

    def pullback(_: object) -> tuple[t.Any, ...]:
        xs.primal.pop()
        return NT, NT, NT

    return CoDual(None, NT), pullback


def append_copies(f: CD, xs: CD, v: CD, *, primal: bool) -> t.Any:
    # WRONG: stores a copy of v (primal=True), or a copy of v's fdata
    xs.primal.append(v.primal.copy() if primal else v.primal)
    xs.fdata.append(v.fdata.copy())

    def pullback(_: object) -> tuple[t.Any, ...]:
        xs.primal.pop()
        np.add(v.fdata, xs.fdata.pop(), out=v.fdata)
        return NT, NT, NT

    return CoDual(None, NT), pullback


# mul(a, b) = a * b on arrays that may overlap in memory.


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return t.cast(np.ndarray, a * b)


@primitive(mul, "f64[:]", "f64[:]", ctx=SELF_TEST)
def mul_rrule(f: CD, a: CD, b: CD) -> t.Any:
    y = a.primal * b.primal
    dy = np.zeros_like(y)

    def pullback(_: object) -> tuple[t.Any, ...]:
        ga, gb = dy * b.primal, dy * a.primal  # both before adding: a's fdata may be b's
        np.add(a.fdata, ga, out=a.fdata)
        np.add(b.fdata, gb, out=b.fdata)
        return NT, NT, NT

    return CoDual(y, dy), pullback


# --------------------------------------------------------------------------------------------
# Correct rules pass


def test_correct_rules_pass() -> None:
    rng = np.random.default_rng(0)
    x, out = arr(rng, 5), arr(rng, 5)
    m = arr(rng, 3, 4)
    testing.test_rules_for(
        [
            testing.case(scale, x, 1.7),
            testing.case(first_row, m),
            testing.case(scale_into, out, x, -0.8, perf="allocs"),
            testing.case(scale_into, x, x, 1.3, perf="allocs"),  # out is x
            testing.case(set_first, [arr(rng, 2), arr(rng, 3)], arr(rng, 2)),
            testing.case(set_first, [1.5, arr(rng, 3)], 2.5),
            testing.case(WEIGHTED, arr(rng, 3)),
            testing.case(scaled_sum, (1.25, arr(rng, 4))),
            testing.case(cscale, arr(rng, 3) + 1j * arr(rng, 3), 0.5 - 1.5j),
            testing.case(append, [arr(rng, 2)], arr(rng, 3)),
            testing.case(append, [1.0, arr(rng, 2)], -0.5),
            testing.case(mul, x, x),
            testing.case(mul, m.ravel()[:6], m.ravel()[3:9]),  # overlapping views
            testing.case(mul, m[0, :3], m[:, 1]),  # views of one owner that do not overlap
        ],
        ctx=SELF_TEST,
    )


def test_the_report_says_what_was_checked() -> None:
    rng = np.random.default_rng(1)
    args = (arr(rng, 4), arr(rng, 4), 0.5)
    report = testing.test_rule(scale_into, *args, ctx=SELF_TEST, perf="allocs")
    assert list(report.results) == [
        "interface",
        "mutation",
        "correctness",
        "reuse",
        "state",
        "allocations",
    ]
    assert report.results["allocations"].startswith("passed")
    assert report.allocations["rule"].allocated == 0
    assert "scale_into(f64[4], f64[4], f64)" in str(report)


# --------------------------------------------------------------------------------------------
# Wrong rules are caught, by the right check


def test_overwriting_fdata_instead_of_adding_is_a_correctness_failure() -> None:
    x = arr(np.random.default_rng(2), 5)
    e = caught(scale, x, 1.7, rule=scale_overwrites_fdata)
    assert e.check == "correctness"
    assert "finite differences" in str(e) and "args[0]" in str(e)
    assert "with all cotangents zero the pullback still changed some fdata" in str(e)


def test_a_gradient_wrong_by_a_factor_is_a_correctness_failure() -> None:
    e = caught(sine, arr(np.random.default_rng(3), 4), rule=sine_twice_the_gradient)
    assert e.check == "correctness"
    # The message shows both directional derivatives, the estimate at every step tried.
    (rule_line,) = [line for line in e.lines if line.strip().startswith("rule ")]
    fd_lines = [line for line in e.lines if "(step " in line]
    claimed = float(rule_line.split("=")[1])
    estimates = [float(line.split("=")[-1].split("(")[0]) for line in fd_lines]
    assert len(estimates) == 6 and all(abs(claimed - x) > 0.1 for x in estimates)


def test_forgetting_to_restore_an_argument_is_a_mutation_failure() -> None:
    rng = np.random.default_rng(4)
    rule = stateful(scale_into_forgets_to_restore)
    e = caught(scale_into, arr(rng, 4), arr(rng, 4), 0.5, rule=rule)
    assert e.check == "mutation"
    assert "args[0]" in str(e) and "does not hold its value" in str(e)


def test_sharing_state_between_pending_calls_is_a_reuse_failure() -> None:
    rng = np.random.default_rng(5)
    e = caught(scale_into, arr(rng, 4), arr(rng, 4), 0.5, rule=stateful(scale_into_shares_state))
    assert e.check == "reuse"
    assert "fwd A, fwd B, pb B, pb A" in str(e)


def test_an_allocating_stateful_rule_is_an_allocations_failure() -> None:
    rng = np.random.default_rng(6)
    args = (arr(rng, 40), arr(rng, 40), 0.5)
    e = caught(scale_into, *args, rule=stateful(scale_into_allocates), perf="allocs")
    assert e.check == "allocations"
    # Three float64[40] a call; the last call's are freed as the new ones are kept.
    assert "allocated: 960 bytes of NumPy memory" in str(e)
    assert "in use at once at most: 960 bytes" in str(e)
    # Without perf="allocs" the same rule passes: it is right, only slow.
    testing.test_rule(scale_into, *args, rule=stateful(scale_into_allocates))


def test_reallocating_buffers_is_an_allocations_failure() -> None:
    # The NumPy memory in use never grows (each buffer is freed before it is allocated again),
    # but every call allocates.
    rng = np.random.default_rng(17)
    rule = StatefulRRule(scale_into_reallocates, Buffers)
    e = caught(scale_into, arr(rng, 40), arr(rng, 40), 0.5, rule=rule, perf="allocs")
    assert e.check == "allocations"
    assert "allocated: 960 bytes of NumPy memory" in str(e)
    assert "in use at once at most: 0 bytes" in str(e)


def test_temporaries_in_a_pullback_are_an_allocations_failure() -> None:
    rng = np.random.default_rng(7)
    rule = stateful(scale_into_allocates_temporaries)
    e = caught(scale_into, arr(rng, 40), arr(rng, 40), 0.5, rule=rule, perf="allocs")
    assert e.check == "allocations"
    assert "allocated: 320 bytes of NumPy memory" in str(e)  # g * s, freed at once
    assert "in use from the forward call to the pullback: 0 bytes" in str(e)
    assert "test_testing.py" in str(e)  # the line that allocates


def test_a_state_that_is_never_resized_is_a_state_failure() -> None:
    rng = np.random.default_rng(8)
    e = caught(scale_into, arr(rng, 4), arr(rng, 4), 0.5, rule=stateful(scale_into_ignores_shapes))
    assert e.check == "state"
    assert "other shapes" in str(e) and "f64[5]" in str(e)


def test_interface_failures() -> None:
    rng = np.random.default_rng(9)
    x = arr(rng, 5)
    e = caught(scale, x, 1.7, rule=scale_too_few_rdata)
    assert e.check == "interface"
    assert "a tuple of 3 rdata, one per operand: f, args[0], args[1]" in str(e)
    e = caught(scale, x, 1.7, rule=scale_float32_fdata)
    assert e.check == "interface" and "the fdata of the result is ndarray float32[5]" in str(e)
    e = caught(power, x, 3, rule=power_with_rdata_for_an_int)
    assert e.check == "interface" and "the rdata returned for args[1] is float" in str(e)
    e = caught(scale, x, 1.7)  # no rule in DefaultContext
    assert e.check == "interface" and "no rule to differentiate" in str(e)


def test_a_view_with_fresh_fdata_is_a_mutation_failure() -> None:
    e = caught(first_row, arr(np.random.default_rng(10), 3, 4), rule=first_row_fresh_fdata)
    assert e.check == "mutation"
    assert "after the forward call, result shares memory (at byte offset 0) with args[0]," in str(e)


def test_restoring_a_copy_instead_of_the_object_is_a_mutation_failure() -> None:
    rng = np.random.default_rng(11)
    e = caught(set_first, [arr(rng, 2), arr(rng, 3)], arr(rng, 2), rule=set_first_restores_a_copy)
    assert e.check == "mutation" and "args[0][0] is another object" in str(e)


def test_complex_conventions() -> None:
    rng = np.random.default_rng(14)
    e = caught(cscale, arr(rng, 3) + 1j * arr(rng, 3), 0.5 - 1.5j, rule=cscale_without_conjugates)
    assert e.check == "correctness"


def test_a_list_whose_tangent_does_not_grow_is_an_interface_failure() -> None:
    rng = np.random.default_rng(15)
    e = caught(append, [arr(rng, 2)], arr(rng, 3), rule=append_forgets_the_tangent)
    assert e.check == "interface"
    assert "the fdata of args[0] after the call is list of 1" in str(e)


def test_storing_copies_is_a_mutation_failure() -> None:
    # Numerically right for this one call; wrong for any later in-place update of the item.
    rng = np.random.default_rng(18)
    xs, v = [arr(rng, 2)], arr(rng, 3)
    e = caught(append, xs, v, rule=lambda *a: append_copies(*a, primal=False))
    assert e.check == "mutation"
    assert "args[0][1] shares memory (at byte offset 0) with args[1],\n" in str(e)
    assert "but its fdata shares nothing with the fdata of args[1]" in str(e)
    e = caught(append, xs, v, rule=lambda *a: append_copies(*a, primal=True))
    assert e.check == "mutation"
    assert "after f, args[0][1] shares memory (at byte offset 0) with args[1];\n" in str(e)


def test_test_rules_for_reports_every_failure() -> None:
    rng = np.random.default_rng(12)
    x = arr(rng, 4)
    cases = [
        testing.case(scale, x, 1.5, ctx=SELF_TEST),
        testing.case(scale, x, 1.5, rule=scale_overwrites_fdata),
        testing.case(sine, x, rule=sine_twice_the_gradient),
    ]
    with pytest.raises(testing.RuleTestErrors) as info:
        testing.test_rules_for(cases)
    assert [e.check for _, e in info.value.errors] == ["correctness", "correctness"]
    assert str(info.value).startswith("2 of 3 rule case(s) failed")


def loss(W: np.ndarray, x: np.ndarray) -> float:
    h = np.tanh(W @ x)
    return float(np.sum(h * h))


def test_derived_rules() -> None:
    rng = np.random.default_rng(16)
    if importlib.util.find_spec("gibbous.api") is None:
        with pytest.raises(NotImplementedError, match="build_rrule"):
            testing.test_rule(loss, arr(rng, 4, 3), arr(rng, 3), is_primitive=False)
        return
    report = testing.test_rule(loss, arr(rng, 4, 3), arr(rng, 3), is_primitive=False)
    assert report.results["correctness"].startswith("passed")


# --------------------------------------------------------------------------------------------
# The in-place rules of gibbous.rules.inplace pass, allocation-free


def inplace_cases() -> list[testing.RuleCase]:
    rng = np.random.default_rng(2024)
    allocs: dict[str, t.Any] = {"perf": "allocs"}
    cases = []
    A, B, C = arr(rng, 3, 4), arr(rng, 4, 5), arr(rng, 3, 5)
    S, R = arr(rng, 4, 4), arr(rng, 4, 4)
    cases += [
        testing.case(np.matmul, A, B, kwargs={"out": C}, **allocs),
        testing.case(np.matmul, A, B, C, **allocs),  # out passed by position
        testing.case(np.matmul, S, R, kwargs={"out": S}, **allocs),  # out is the first input
        testing.case(np.matmul, S, S, kwargs={"out": S}, **allocs),
        testing.case(
            np.matmul,
            np.asfortranarray(arr(rng, 4, 3)),
            arr(rng, 5, 3).T,
            kwargs={"out": arr(rng, 4, 5)[:, ::-1]},
            **allocs,
        ),
        testing.case(
            np.matmul, A.astype("float32"), B.astype("float32"), kwargs={"out": C.astype("float32")}
        ),
    ]
    for ufunc in (np.add, np.subtract, np.multiply, np.divide):
        x, y, z = arr(rng, 3, 4), arr(rng, 3, 4), arr(rng, 3, 4)
        cases += [
            testing.case(ufunc, x, y, kwargs={"out": z}, **allocs),
            testing.case(ufunc, x, arr(rng, 4), kwargs={"out": z}, **allocs),  # broadcast
            testing.case(ufunc, arr(rng, 3, 1), arr(rng, 1, 4), kwargs={"out": z}, **allocs),
            testing.case(ufunc, 1.7, y, kwargs={"out": z}, **allocs),  # a float: rdata
            testing.case(ufunc, x, 3, kwargs={"out": z}, **allocs),  # an int: no gradient
            testing.case(ufunc, x, y, kwargs={"out": x}, **allocs),  # the output is an input
            testing.case(ufunc, x, x, kwargs={"out": x}, **allocs),
            testing.case(ufunc, x, y, z, **allocs),  # out passed by position
        ]
    for op in (operator.iadd, operator.isub, operator.imul, operator.itruediv):
        a = arr(rng, 3, 4)
        cases += [
            testing.case(op, a, arr(rng, 3, 4), **allocs),
            testing.case(op, arr(rng, 2, 3, 4), arr(rng, 3, 1), **allocs),
            testing.case(op, a, 1.3, **allocs),
            testing.case(op, a, 2, **allocs),
            testing.case(op, a, a, **allocs),  # a += a
            testing.case(op, arr(rng, 5, 6)[1:4, ::2], arr(rng, 3, 3), **allocs),  # a view
        ]
    return cases


@testing.parametrize(inplace_cases())
def test_inplace_rules(case: testing.RuleCase) -> None:
    report = case.run()
    if case.options.get("perf") == "allocs":
        assert report.results["allocations"].startswith("passed"), report


def test_overlapping_views_of_one_array() -> None:
    # a[1:] += a[:-1]: two arguments overlapping in memory, neither the owner.
    base = arr(np.random.default_rng(13), 6)
    testing.test_rule(operator.iadd, base[1:4], base[2:5])
    testing.test_rule(np.add, base[:3], base[1:4], kwargs={"out": base[2:5]})


# --------------------------------------------------------------------------------------------
# The machinery


def test_copies_keep_sharing() -> None:
    base = np.arange(12.0).reshape(3, 4)
    values: list[t.Any] = [base, base[1:, ::2], base.T, [base, 2.0], (base[0], 3)]
    copier = Copier()
    new = [copier.copy(v) for v in values]
    assert new[3][0] is new[0]  # one object stays one object
    assert all(n.strides == v.strides for n, v in zip(new[:3], values[:3]))
    new[0][1, 0] = -1.0  # views stay views of one memory
    assert new[1][0, 0] == -1.0 and new[2][0, 1] == -1.0 and new[4][0][0] == 0.0
    assert memory_span(new[1])[0] is memory_span(new[0])[0]
    assert base[1, 0] == 4.0  # the original is untouched


def test_pairings_count_shared_memory_once() -> None:
    base = np.arange(6.0)
    roots = [("a", base[:4]), ("b", base[2:])]  # overlapping in base[2:4]
    ones = zero_fdatas(base[:4], base[2:])
    for d in ones:
        d[...] = 1.0
    # <1, 1> over the union of the memory: 6 elements, not 8.
    assert inner(roots, list(ones), list(ones)) == 6.0
