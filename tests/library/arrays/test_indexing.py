"""x[index] and x[index] = value on arrays: views, copies, scatter-adds, restoration, repeated
indices, aliasing, the stack of states, and allocations of warm calls."""

from __future__ import annotations

import operator
import typing as t

import numpy as np
import pytest

from gibbous.ir import types as T
from gibbous.library.arrays.indexing import SetitemState
from gibbous.rules.registry import DefaultContext, build_primitive_rrule
from gibbous.rules.stateful import StatefulRRule, plain_rrule
from gibbous.tangents.model import CoDual, NoTangent, zero_coduals
from tests.library.harness import Tape, call, check, check_like_float64, gradient
from tests.rules.test_stateful import NUMPY, PYTHON_OBJECTS, measure

NT = NoTangent()

BASIC = [
    1, -1, slice(1, 3), slice(None, None, -1), (1, 2), (slice(None), 0), (Ellipsis, 1),
    (None, slice(1, None)), (slice(None, None, 2), None, Ellipsis), (1, Ellipsis), (),
    (slice(1, 2), slice(0, 3, 2)),
]  # fmt: skip
ADVANCED = [
    np.array([0, 2, 2]), [1, 0], np.array([True, False, True]), (slice(None), [0, 3, 0]),
    (np.array([0, 1]), np.array([2, 3])), np.array([[0, 1], [2, 2]]),
    (np.array([True, True, False]), slice(1, 3)), (Ellipsis, np.array([1, 1])),
]  # fmt: skip


@pytest.mark.parametrize("index", BASIC + ADVANCED, ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_getitem(index: t.Any, dtype: t.Any, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4)).astype(dtype)
    if dtype is np.complex128:
        x = x + 1j * rng.standard_normal((3, 4))
    check(call(operator.getitem, index), x, rng=rng)


@pytest.mark.parametrize("index", BASIC[:4] + ADVANCED[:3], ids=repr)
def test_getitem_float32(index: t.Any, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4)).astype(np.float32)
    check_like_float64(call(operator.getitem, index), x)


def test_basic_indexing_gives_a_view_of_the_fdata(rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    tape = Tape()
    (v,) = tape.inputs(x)
    y = tape.call(operator.getitem, v, tape.const((slice(1, None), slice(None, None, 2))))
    assert np.shares_memory(y.fdata, v.fdata) and y.fdata.strides == y.primal.strides
    element = tape.call(operator.getitem, v, tape.const((1, 2)))
    assert isinstance(element.primal, np.float64) and element.fdata is NT
    picked = tape.call(operator.getitem, v, tape.const(np.array([0, 0])))
    assert not np.shares_memory(picked.fdata, v.fdata)


def test_repeated_indices_add_up() -> None:
    (g,) = gradient(call(operator.getitem, np.array([0, 2, 0, 0])), np.arange(3.0))
    np.testing.assert_array_equal(g, [3.0, 0.0, 1.0])


def test_getitem_of_int_arrays_has_no_tangent() -> None:
    assert gradient(call(operator.getitem, 1), np.arange(3)) == [NT]


# --------------------------------------------------------------------------------------------
# setitem


def setitem(index: t.Any) -> t.Callable[..., t.Any]:
    return lambda tape, x, v: tape.call(operator.setitem, x, tape.const(index), v)


SET_CASES = [
    (1, ()), (-1, (4,)), (1, (1, 4)), (slice(0, 2), (2, 4)), (slice(0, 2), (4,)),
    (slice(0, 2), (2, 1)), ((slice(None), 0), (3,)), ((Ellipsis, -1), ()), ((1, 2), ()),
    ((None, 0), (4,)), (np.array([0, 2]), (2, 4)), (np.array([True, False, True]), (4,)),
    ((slice(None), [0, 3]), (3, 1)),
    ((np.array([0, 1]), np.array([2, 3])), (2,)),
]  # fmt: skip


@pytest.mark.parametrize("index, vshape", SET_CASES, ids=str)
def test_setitem_with_an_array_value(
    index: t.Any, vshape: tuple[int, ...], rng: np.random.Generator
) -> None:
    x, v = rng.standard_normal((3, 4)), rng.standard_normal(vshape)
    check(setitem(index), x, v, rng=rng)


@pytest.mark.parametrize(
    "index", [1, slice(0, 2), (1, 2), np.array([0, 2]), np.array([True, False, True])], ids=repr
)
def test_setitem_with_a_scalar_value(index: t.Any, rng: np.random.Generator) -> None:
    out = check(setitem(index), rng.standard_normal((3, 4)), 0.75, rng=rng)
    assert type(out.rdata[1]) is float


def test_setitem_with_a_list_value(rng: np.random.Generator) -> None:
    check(setitem(slice(0, 2)), rng.standard_normal(4), [0.5, -1.5], rng=rng)


def test_setitem_complex_and_float32(rng: np.random.Generator) -> None:
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    check(setitem(slice(1, 3)), z, rng.standard_normal(4) - 0.5j, rng=rng)
    check(setitem(slice(1, 3)), z, rng.standard_normal(4), rng=rng)  # a real value
    x32 = rng.standard_normal((3, 4)).astype(np.float32)
    check_like_float64(setitem(slice(0, 2)), x32, rng.standard_normal(4).astype(np.float32))


def test_setitem_with_repeated_indices_the_last_write_wins() -> None:
    tape = Tape()
    x, v = tape.inputs(np.zeros(3), np.array([1.0, 2.0, 3.0]))
    tape.call(operator.setitem, x, tape.const(np.array([0, 0, 2])), v)
    np.testing.assert_array_equal(x.primal, [2.0, 0.0, 3.0])
    x.fdata[...] = [10.0, 20.0, 30.0]  # the cotangent of x after the write
    tape.backward()
    np.testing.assert_array_equal(v.fdata, [0.0, 10.0, 30.0])
    np.testing.assert_array_equal(x.fdata, [0.0, 20.0, 0.0])
    np.testing.assert_array_equal(x.primal, [0.0, 0.0, 0.0])


def test_setitem_of_a_view_of_the_same_array() -> None:
    # a[1:] = a[:-1]: the value aliases the array it is written into.
    a = np.array([1.0, 2.0, 3.0, 4.0])
    start_fdata = np.array([0.1, 0.2, 0.3, 0.4])
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    tape = Tape()
    (x,) = tape.inputs(a)
    x.fdata[...] = start_fdata
    v = tape.call(operator.getitem, x, tape.const(slice(None, -1)))
    tape.call(operator.setitem, x, tape.const(slice(1, None)), v)
    np.testing.assert_array_equal(a, [1.0, 1.0, 2.0, 3.0])
    x.fdata[...] += w
    tape.backward()
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0, 4.0])
    # L = <w, a after> = w0 a0 + w1 a0 + w2 a1 + w3 a2: dL/da = [w0 + w1, w2, w3, 0]
    np.testing.assert_allclose(x.fdata, start_fdata + [1.0 + 10.0, 100.0, 1000.0, 0.0])


def test_setitem_through_a_view_is_seen_by_the_base(rng: np.random.Generator) -> None:
    def program(tape: t.Any, x: t.Any, v: t.Any) -> t.Any:
        row = tape.call(operator.getitem, x, tape.const(1))  # a view of row 1
        tape.call(operator.setitem, row, tape.const(slice(0, 2)), v)
        return tape.call(np.sum, tape.call(operator.mul, x, x))

    check(program, rng.standard_normal((3, 4)), rng.standard_normal(2), rng=rng)


def test_augmented_assignment_on_a_region(rng: np.random.Generator) -> None:
    # m[1:3, 1] += 2.0 is getitem (a view), iadd on it (in place), setitem back.
    def program(tape: t.Any, m: t.Any, s: t.Any) -> t.Any:
        index = tape.const((slice(1, 3), 1))
        region = tape.call(operator.getitem, m, index)
        updated = tape.call(operator.iadd, region, s)
        tape.call(operator.setitem, m, index, updated)
        return tape.call(np.sum, tape.call(np.sin, m))

    check(program, rng.standard_normal((3, 4)), 0.75, rng=rng)


def test_setitem_int_array_target_has_no_fdata(rng: np.random.Generator) -> None:
    tape = Tape()
    x, v = tape.inputs(np.arange(4), 2.5)
    tape.call(operator.setitem, x, tape.const(1), v)
    tape.backward()
    np.testing.assert_array_equal(x.primal, np.arange(4))


def _site(x: np.ndarray, index: t.Any, v: t.Any) -> StatefulRRule[t.Any]:
    types = [T.typeof(x), T.typeof(index, const=True), T.typeof(v)]
    rule = build_primitive_rrule(DefaultContext, operator.setitem, types, debug=True)
    assert isinstance(rule, StatefulRRule)
    return rule


def test_repeated_calls_before_the_pullbacks_and_reuse_of_state(rng: np.random.Generator) -> None:
    a = rng.standard_normal((3, 4))
    start = a.copy()
    ca, cv = zero_coduals(a, rng.standard_normal(4))
    site = _site(a, 1, cv.primal)
    f, index = CoDual(operator.setitem, NT), CoDual(1, NT)
    pullbacks = []
    for k in range(3):  # a[1] = v, a[1] += ..., in a loop
        _, pb = site(f, ca, index, cv)
        pullbacks.append(pb)
        np.multiply(cv.primal, 2.0, out=cv.primal)
    assert site.depth == 3 and len({id(s) for s in site.states}) == 3
    for k in range(3):
        np.divide(cv.primal, 2.0, out=cv.primal)
    ca.fdata[...] = 1.0
    for pb in reversed(pullbacks):
        pb(NT)
    np.testing.assert_array_equal(a, start)
    assert site.depth == 0
    states = site.states
    _, pb = site(f, ca, index, cv)
    pb(NT)
    assert site.states[0] is states[0]  # warm: the same buffers


def test_shape_changes_reallocate(rng: np.random.Generator) -> None:
    site = _site(np.zeros((3, 4)), slice(0, 2), np.zeros(4))
    for shape in [(3, 4), (5, 2), (3, 4)]:
        a = rng.standard_normal(shape)
        ca, cv = zero_coduals(a, rng.standard_normal(shape[1]))
        _, pb = site(CoDual(operator.setitem, NT), ca, CoDual(slice(0, 2), NT), cv)
        pb(NT)
        state = site.states[0]
        assert isinstance(state, SetitemState) and state.saved.shape == (2, shape[1])


@pytest.mark.parametrize(
    "index, vshape",
    [((slice(10, 60), slice(None)), (50, 50)), (slice(5, 95), (50,)), ((3, 7), ())],
    ids=str,
)
def test_warm_setitem_holds_no_numpy_memory(index: t.Any, vshape: t.Any) -> None:
    rng = np.random.default_rng(11)
    a, v = rng.standard_normal((100, 50)), rng.standard_normal(vshape) if vshape else 0.5
    ca, cv = zero_coduals(a, v)
    site = _site(a, index, v)
    f, ci = CoDual(operator.setitem, NT), CoDual(index, NT)

    def primal() -> None:
        a[index] = v

    def stateful() -> t.Any:
        return site(f, ca, ci, cv)[1]

    plain = plain_rrule(site.rule)

    def fresh() -> t.Any:
        return plain(f, ca, ci, cv)[1]

    base = measure(primal)
    warm = measure(stateful)
    cold = measure(fresh)
    assert warm.held_after_forward == 0 and warm.held_after_reverse == 0, warm
    assert warm.peak < base.peak + PYTHON_OBJECTS, (warm, base)
    region = np.asarray(a[index]).nbytes
    if region >= 4096:  # the plain rule keeps fresh copies of the region until its pullback
        assert cold.held_after_forward >= 2 * region and cold.held_after_reverse == 0, cold
    assert NUMPY  # the NumPy-domain filter of tests/rules/test_stateful.py


# --------------------------------------------------------------------------------------------
# The audit's cases: every indexing form, with the allocation policy (a warm call allocates no
# NumPy memory when the primal allocates none, advanced indexing included).


def _audit_cases(name: str) -> list[t.Any]:
    from gibbous.audit.cases.arrays import arrays

    return t.cast(list[t.Any], getattr(arrays, name))


@pytest.mark.parametrize("case", _audit_cases("SETITEM"), ids=lambda c: c.id)
def test_setitem_cases(case: t.Any) -> None:
    case.run(perf="allocs")


@pytest.mark.parametrize("case", _audit_cases("GETITEM"), ids=lambda c: c.id)
def test_getitem_cases(case: t.Any) -> None:
    case.run(perf="allocs")


@pytest.mark.parametrize(
    "indices",
    [
        [np.array([0, 2, 2]), np.array([1, 1, 0]), np.array([2, 0, 1])],
        [np.array([True, False, True]), np.array([False, True, True]), np.array([True] * 3)],
        [(np.array([0, 1, 1]), slice(None)), (np.array([2, 2]), slice(None, None, -1))],
    ],
    ids=["ints", "masks of several counts", "with slices"],
)
def test_advanced_setitem_in_a_loop_agrees_with_the_plain_rule(
    indices: list[t.Any], rng: np.random.Generator
) -> None:
    a0, v0 = rng.standard_normal((3, 4)), rng.standard_normal(4)
    site = _site(a0, indices[0], v0)
    plain = plain_rrule(site.rule)
    results = []
    for rule in (site, plain):
        a, v = a0.copy(), v0.copy()
        ca, cv = zero_coduals(a, v)
        ca.fdata[...] = rng.standard_normal(a.shape) if rule is site else results[0][2]
        start_fdata = ca.fdata.copy()
        pullbacks = []
        for k, index in enumerate(indices):
            value = cv if index is indices[0] else CoDual(v * (k + 1.0), np.zeros(4))
            _, pb = rule(CoDual(operator.setitem, NT), ca, CoDual(index, NT), value)
            pullbacks.append((pb, value))
        written = a.copy()
        ca.fdata[...] = np.arange(12.0).reshape(3, 4)  # the cotangent of the final array
        grads = [pb(NT)[3] for pb, _ in reversed(pullbacks)]
        np.testing.assert_array_equal(a, a0)  # restored
        values = [value.fdata.copy() for _, value in pullbacks]
        results.append((written, values, start_fdata, ca.fdata.copy(), grads))
    (w1, g1, _, f1, _), (w2, g2, _, f2, _) = results
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_allclose(f1, f2)
    for x, y in zip(g1, g2):
        np.testing.assert_allclose(x, y)
    assert site.depth == 0


def test_warm_advanced_setitem_reuses_its_state(rng: np.random.Generator) -> None:
    a, v = rng.standard_normal((3, 4)), rng.standard_normal(4)
    ca, cv = zero_coduals(a, v)
    site = _site(a, np.array([0, 2]), v)
    f = CoDual(operator.setitem, NT)
    seen = []
    for index in (np.array([0, 2]), np.array([1, 1]), np.array([2, 0])):  # same shapes
        _, pb = site(f, ca, CoDual(index, NT), cv)
        pb(NT)
        seen.append(site.states[0])
    assert seen[0] is seen[1] is seen[2]
    mask = np.array([True, False, True])
    for index in (mask, ~mask):  # another count of True: another region
        _, pb = site(f, ca, CoDual(index, NT), cv)
        pb(NT)
        assert site.states[0].region == (int(index.sum()), 4)
